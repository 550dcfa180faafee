import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../lib/http/api-handler.js';
import { API_ROUTES } from '../../lib/http/api-routes.js';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { operatorRuleFromConfig, type OperatorRule } from '../../lib/http/operator-identity.js';
import { DEV_OPERATOR_GROUP, withLocalOperatorRule } from '../../lib/local/dev-operator.js';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken } from '../../lib/local/dev-token.js';
import { startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { silentLogger } from '../../lib/logger.js';
import { isWellFormedText } from '../../lib/jobs/job-limits.js';
import { operatorActor } from '../../lib/owners/actor.js';
import type { ApiEventInput } from '../support/api-events.js';
import { apiEvent, lambdaContext, parseResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** Every operator route of the API (the OpenAPI document of the operator surface included), with ids that exist nowhere. */
const OPERATOR_ROUTES = API_ROUTES.flatMap((route) => (route.access === 'operator' ? [{ method: route.method, scope: route.scope, path: route.path.replace('{id}', randomUUID()) }] : []));
const POST_ROUTES = OPERATOR_ROUTES.filter((route) => route.method === 'POST');
const BOTH_SCOPES = 'ops:read ops:write';
const SECRET = 'operator-identity-test-secret-of-32-chars';
const WAIT = { taskType: 'demo.wait', subject: { type: 'document', id: 'doc-1' }, params: { durationMs: 1 } };

/** A rule for each deployment style: a separate operator issuer and audience, a group claim, a subject allow-list. */
const ISSUER_RULE: OperatorRule = { issuer: 'https://ops.issuer.test', audience: 'ops-console', groups: [], subjects: [] };
const GROUP_RULE: OperatorRule = { groupClaim: 'cognito:groups', groups: ['ops-admins'], subjects: [] };
const SUBJECT_RULE: OperatorRule = { groups: [], subjects: ['ops-alice'] };

describe.each(DIALECTS)('operator identity and the one sub rule, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let server: LocalHttpServer;
  let missing: unknown;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    server = await startLocalHttpServer({ port: 0, handler: app.handler, devJwtSecret: SECRET, logger: silentLogger });
    missing = (await app.call({ method: 'GET', path: '/api/ops/nowhere', owner: 'someone' })).json;
  });
  afterAll(async () => {
    await server?.close();
    await app?.drop();
  });

  /** Calls the local HTTP server (dev-token verification, then the API handler) with `token`. */
  const fetchAs = async (token: string, method: string, path: string) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    return { status: response.status, json: (await response.json()) as unknown, headers: Object.fromEntries(response.headers) };
  };

  /** Calls the API handler built over the test app's dependencies with `rule` as its operator rule. */
  const callWith = async (rule: OperatorRule | undefined, input: ApiEventInput) =>
    parseResponse(await createApiHandler({ ...app.deps, operatorRule: rule })(apiEvent(input), lambdaContext()));

  const expectUnknownPath = (response: { status: number; json: unknown; headers: Record<string, string> }, what: string) => {
    expect(response.status, what).toBe(404);
    expect(response.json, what).toEqual(missing);
    expect(response.headers, what).not.toHaveProperty('allow');
  };

  it.skipIf(skip)('an owner token with ops:read ops:write that fails the operator rule gets the unknown-path 404 on every operator route, under every method', async () => {
    const outsiders: ReadonlyArray<readonly [string, OperatorRule | undefined, Record<string, string>]> = [
      ['no rule configured', undefined, { 'cognito:groups': '[ops-admins]' }],
      ['the owner issuer, not the operator one', ISSUER_RULE, { aud: 'ops-console' }],
      ['the operator issuer for another audience', ISSUER_RULE, { iss: 'https://ops.issuer.test', aud: 'owner-app', client_id: 'owner-app' }],
      ['no operator group', GROUP_RULE, { 'cognito:groups': '[owners ops-admins-2]' }],
      ['a subject not listed', SUBJECT_RULE, {}],
    ];
    for (const [name, rule, claims] of outsiders) {
      for (const route of OPERATOR_ROUTES) {
        for (const method of ['GET', 'POST', 'PATCH']) {
          const response = await callWith(rule, { method, path: route.path, owner: 'mallory', scope: BOTH_SCOPES, claims, body: method === 'GET' ? undefined : {} });
          expectUnknownPath(response, `${name}: ${method} ${route.path}`);
        }
      }
    }
  });

  it.skipIf(skip)('a token passing each style of rule is let through, and the scope still chooses read vs write', async () => {
    const insiders: ReadonlyArray<readonly [string, OperatorRule, string, Record<string, string>]> = [
      ['the operator issuer and audience', ISSUER_RULE, 'ops-bob', { iss: 'https://ops.issuer.test', aud: 'ops-console' }],
      ['the operator issuer and app client id (a Cognito access token)', ISSUER_RULE, 'ops-bob', { iss: 'https://ops.issuer.test', client_id: 'ops-console' }],
      ['an audience array, as API Gateway passes it', ISSUER_RULE, 'ops-bob', { iss: 'https://ops.issuer.test', aud: '[other ops-console]' }],
      ['the operator group among others, as API Gateway passes an array claim', GROUP_RULE, 'ops-carol', { 'cognito:groups': '[owners ops-admins]' }],
      ['a one-group string claim', GROUP_RULE, 'ops-carol', { 'cognito:groups': 'ops-admins' }],
      ['a listed subject', SUBJECT_RULE, 'ops-alice', {}],
    ];
    for (const [name, rule, owner, claims] of insiders) {
      const read = await callWith(rule, { method: 'GET', path: '/api/ops/capacity', owner, scope: 'ops:read', claims });
      expect(read.status, name).toBe(200);
      for (const route of POST_ROUTES) {
        expectUnknownPath(await callWith(rule, { method: 'POST', path: route.path, owner, scope: 'ops:read', claims, body: {} }), `${name}, ops:read only: POST ${route.path}`);
        const write = await callWith(rule, { method: 'POST', path: route.path, owner, scope: 'ops:write', claims, body: {} });
        expect(write.json?.code, `${name}, ops:write: POST ${route.path}`).not.toBe('route_not_found');
      }
    }
  });

  it.skipIf(skip)('scopes split on the space character only: a no-break space, tab or newline between two scopes grants neither', async () => {
    expect((await app.call({ method: 'GET', path: '/api/ops/capacity', owner: 'ops-dave', scope: BOTH_SCOPES })).status).toBe(200);
    for (const separator of ['\u00a0', '\t', '\n', '\u2003']) {
      const scope = `ops:read${separator}ops:write`;
      for (const route of OPERATOR_ROUTES) {
        expectUnknownPath(await app.call({ method: route.method, path: route.path, owner: 'ops-dave', scope, body: route.method === 'POST' ? {} : undefined }), `${JSON.stringify(scope)}: ${route.method} ${route.path}`);
      }
    }
  });

  it.skipIf(skip)('a sub with a lone surrogate or of 129 characters is refused (401) and nothing is stored', async () => {
    // Lone surrogates, over-long, and control/format characters (a terminal escape, a forged CLI row, bidi, zero-width, NUL).
    for (const sub of ['\ud800', '\udfff', 'alice\ud800', '\udc00bob', 'x'.repeat(129), '😀'.repeat(129), 'evil\u001b[31m', 'a\r\nb', 'alice\u202e', '\u200balice', 'a\u0000']) {
      const response = await app.call({ method: 'POST', path: '/api/operations', owner: sub, headers: { 'idempotency-key': 'k-1' }, body: WAIT });
      expect(response.status, JSON.stringify(sub)).toBe(401);
      expect(await app.countOperations(sub)).toBe(0);
    }
    expect(await app.countOperations('\ufffd')).toBe(0);
  });

  it.skipIf(skip)('a sub of 128 astral characters (256 UTF-16 units) is one owner: admitted, then read back as the same owner', async () => {
    const sub = '😀'.repeat(127) + '𝒜';
    expect(sub.length).toBe(256);
    const admitted = await app.call({ method: 'POST', path: '/api/operations', owner: sub, headers: { 'idempotency-key': 'astral-1' }, body: WAIT });
    expect(admitted.status).toBe(202);
    const read = await app.call({ method: 'GET', path: `/api/operations/${admitted.json.id}`, owner: sub });
    expect(read.status).toBe(200);
    expect(await app.countOperations(sub)).toBe(1);
    const other = await app.call({ method: 'GET', path: `/api/operations/${admitted.json.id}`, owner: '😀'.repeat(128) });
    expect(other.status).toBe(404);
  });

  it.skipIf(skip)('through the local HTTP server: a dev token with both ops scopes but not the operator group gets the unknown-path 404 on every operator route', async () => {
    const outsider = await signDevToken('mallory', SECRET, { scope: ['ops:read', 'ops:write'], groups: [] });
    const operator = await signDevToken('ops-erin', SECRET, { scope: ['ops:read', 'ops:write'] });
    for (const route of OPERATOR_ROUTES) {
      for (const method of ['GET', 'POST']) expectUnknownPath(await fetchAs(outsider, method, route.path), `${method} ${route.path}`);
      expect((await fetchAs(operator, route.method, route.path)).json, `${route.method} ${route.path}`).not.toEqual(missing);
    }
  });

  it.skipIf(skip)('through the local HTTP server: a dev token whose sub holds a lone surrogate or 129 characters is refused (401)', async () => {
    for (const sub of ['\ud800', 'x\udfff', '😀'.repeat(129)]) {
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(sub)
        .setIssuer(DEV_TOKEN_ISSUER)
        .setAudience(DEV_TOKEN_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(SECRET));
      expect((await fetchAs(token, 'GET', '/api/operations')).status, JSON.stringify(sub)).toBe(401);
    }
    await expect(signDevToken('\ud800', SECRET)).rejects.toThrow();
  });
});

describe('the actor label of an operator action (lease owner, canceller)', () => {
  it('is operator:<sub> cut to 128 code points, never through a surrogate pair', () => {
    const owner = operatorActor('😀'.repeat(128));
    expect(isWellFormedText(owner)).toBe(true);
    expect(Array.from(owner)).toHaveLength(128);
    expect(owner.startsWith('operator:😀')).toBe(true);
    expect(operatorActor('ops-alice')).toBe('operator:ops-alice');
  });
});

describe('the operator rule of the configuration', () => {
  it('is none unless configured: then nobody is an operator', () => {
    expect(operatorRuleFromConfig(loadConfig({}))).toBeUndefined();
    expect(operatorRuleFromConfig(loadConfig({ OPERATOR_JWT_ISSUER: 'https://ops.issuer.test', OPERATOR_JWT_AUDIENCE: 'ops' }))).toEqual({
      issuer: 'https://ops.issuer.test',
      audience: 'ops',
      groups: [],
      subjects: [],
    });
    expect(operatorRuleFromConfig(loadConfig({ OPERATOR_GROUP_CLAIM: 'cognito:groups', OPERATOR_GROUPS: ' ops-admins , oncall,ops-admins' }))).toEqual({
      groupClaim: 'cognito:groups',
      groups: ['ops-admins', 'oncall'],
      subjects: [],
    });
  });

  it.each([
    ['an audience without an issuer', { OPERATOR_JWT_AUDIENCE: 'ops' }, /OPERATOR_JWT_AUDIENCE is set but OPERATOR_JWT_ISSUER is not/],
    ['groups without their claim', { OPERATOR_GROUPS: 'ops-admins' }, /OPERATOR_GROUP_CLAIM and OPERATOR_GROUPS go together/],
    ['a group claim without groups', { OPERATOR_GROUP_CLAIM: 'cognito:groups' }, /OPERATOR_GROUP_CLAIM and OPERATOR_GROUPS go together/],
    ['a subject of 129 characters', { OPERATOR_SUBJECTS: `ok,${'😀'.repeat(129)}` }, /OPERATOR_SUBJECTS: .*at most 128 characters/],
    ['a subject with a lone surrogate', { OPERATOR_SUBJECTS: 'x\ud800' }, /OPERATOR_SUBJECTS: .*well-formed/],
    // API Gateway hands an array claim over as one space-joined string: such a name could never match, and one word
    // of another group's name would.
    ['a group name with a space', { OPERATOR_GROUP_CLAIM: 'groups', OPERATOR_GROUPS: 'Durable Ops Operators' }, /OPERATOR_GROUPS: .*without spaces or brackets/],
    ['a group name with a bracket', { OPERATOR_GROUP_CLAIM: 'groups', OPERATOR_GROUPS: '[ops]' }, /OPERATOR_GROUPS: .*without spaces or brackets/],
  ])('refuses %s at start (ConfigError)', (_name, env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('the local stack allows its dev operator group only when no rule is configured', () => {
    expect(operatorRuleFromConfig(withLocalOperatorRule(loadConfig({})))).toEqual({ groupClaim: 'groups', groups: [DEV_OPERATOR_GROUP], subjects: [] });
    expect(operatorRuleFromConfig(withLocalOperatorRule(loadConfig({ OPERATOR_SUBJECTS: 'ops-alice' })))).toEqual({ groups: [], subjects: ['ops-alice'] });
  });
});
