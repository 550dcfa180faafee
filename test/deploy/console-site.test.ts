import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { references, ROOT } from './cfn-template.js';

/**
 * infra/console-site.yml: the console's static-site stack parses as plain YAML, refers only to what it
 * defines, keeps the bucket private (CloudFront reads it through origin access control), forwards /api/* uncached to
 * the HTTP API, and its viewer-request function sends the console's client-side routes — and nothing else — to
 * index.html.
 */
interface Template {
  Parameters: Record<string, unknown>;
  Resources: Record<string, { Type: string; Properties: Record<string, any> }>;
  Outputs: Record<string, unknown>;
}

const document = parseDocument(readFileSync(join(ROOT, 'infra/console-site.yml'), 'utf8'));
const template = document.toJS() as Template;
const resource = (id: string) => {
  const r = template.Resources[id];
  if (!r) throw new Error(`no resource ${id}`);
  return r;
};

describe('infra/console-site.yml', () => {
  it('parses without short-form tags and refers only to its own parameters, resources and AWS pseudo parameters', () => {
    expect(document.errors.map(String)).toEqual([]);
    expect(document.warnings.map(String)).toEqual([]);
    const known = new Set([...Object.keys(template.Parameters), ...Object.keys(template.Resources)]);
    expect([...references(template).refs].filter((r) => !known.has(r) && !r.startsWith('AWS::'))).toEqual([]);
    expect(Object.keys(template.Outputs).sort()).toEqual(['BucketName', 'DistributionDomainName']);
  });

  it('keeps the bucket private: public access blocked, readable only by this distribution, only under console/', () => {
    expect(resource('ConsoleBucket').Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const [statement] = resource('ConsoleBucketPolicy').Properties.PolicyDocument.Statement;
    expect(statement).toMatchObject({ Effect: 'Allow', Principal: { Service: 'cloudfront.amazonaws.com' }, Action: 's3:GetObject' });
    expect(statement.Resource['Fn::Sub']).toBe('${ConsoleBucket.Arn}/console/*');
    expect(statement.Condition.StringEquals['AWS:SourceArn']['Fn::Sub']).toContain('distribution/${ConsoleDistribution}');
  });

  it('forwards /api/* to the HTTP API over HTTPS with every method, no caching and the Authorization header', () => {
    const config = resource('ConsoleDistribution').Properties.DistributionConfig;
    const api = config.CacheBehaviors.find((b: { PathPattern: string }) => b.PathPattern === '/api/*');
    expect(api).toMatchObject({
      TargetOriginId: 'http-api',
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
    });
    expect(api.AllowedMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'OPTIONS']));
    const origin = config.Origins.find((o: { Id: string }) => o.Id === 'http-api');
    expect(origin).toMatchObject({ DomainName: { Ref: 'ApiDomainName' }, CustomOriginConfig: { OriginProtocolPolicy: 'https-only' } });
    // No distribution-wide error pages: they would turn the API's 404 problem+json into the console's HTML.
    expect(config.CustomErrorResponses).toBeUndefined();
  });

  it('sends the console the same security headers as the local server: CSP, no framing, nosniff, no referrer, HSTS', () => {
    const config = resource('ConsoleDistribution').Properties.DistributionConfig;
    expect(config.DefaultCacheBehavior.ResponseHeadersPolicyId).toEqual({ Ref: 'ConsoleHeadersPolicy' });
    const headers = resource('ConsoleHeadersPolicy').Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    const local = readFileSync(join(ROOT, 'lib/local/local-http-server.ts'), 'utf8');
    expect(local).toContain(headers.ContentSecurityPolicy.ContentSecurityPolicy);
    expect(headers.ContentSecurityPolicy.ContentSecurityPolicy).toContain("frame-ancestors 'none'");
    expect(headers).toMatchObject({ FrameOptions: { FrameOption: 'DENY' }, ReferrerPolicy: { ReferrerPolicy: 'no-referrer' }, ContentTypeOptions: { Override: true } });
    expect(headers.StrictTransportSecurity.AccessControlMaxAgeSec).toBeGreaterThanOrEqual(31_536_000);
  });

  it.each([
    ['/console', '/console/index.html'],
    ['/console/', '/console/index.html'],
    ['/console/operations/0b2e7447', '/console/index.html'],
    ['/console/assets/index-3f2a.js', '/console/assets/index-3f2a.js'],
    ['/console/favicon.svg', '/console/favicon.svg'],
    ['/', '/'],
    ['/consoles', '/consoles'],
    ['/api/ops/operations', '/api/ops/operations'],
  ])('its viewer-request function rewrites %s to %s', (uri, expected) => {
    const code: string = resource('ConsoleRewriteFunction').Properties.FunctionCode;
    const handler = runInNewContext(`${code}\nhandler`) as (event: { request: { uri: string } }) => { uri: string };
    expect(handler({ request: { uri } }).uri).toBe(expected);
  });
});
