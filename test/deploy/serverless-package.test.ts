import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { API_ROUTES, methodsOf } from '../../lib/http/api-routes.js';
import { operatorRuleFromConfig } from '../../lib/http/operator-identity.js';
import { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from '../../lib/http/cors.js';
import { SQS_POLLER_DEFAULTS } from '../../lib/local/sqs-poller.js';
import { tracingSettingsFromEnv } from '../../lib/tracing/tracing-settings.js';
import { migrations } from '../../migrations/index.js';
import { withLambdaBundles } from '../support/lambda-bundles.js';
import {
  actionsOf,
  conditionHolds,
  evaluate,
  oslsPackage,
  readTemplate,
  removeOslsCache,
  resourcesOf,
  ROOT,
  runNode,
  statementsOf,
  type Resource,
  type Template,
} from './cfn-template.js';

/**
 * CI validates packaging offline (docs/design.md §9): `npm run build`, then `osls package` with dummy parameters and no
 * AWS credentials, and the CloudFormation template must hold everything serverless.yml promises.
 */

/** Every parameter without a default, with dummy values. */
const REQUIRED = {
  jwtIssuer: 'https://issuer.ci.example.com/pool',
  jwtAudience: 'ci-audience',
  databaseHost: 'proxy.ci.example.com',
  databaseSecretId: 'durable-ops/ci/app',
  migrationDatabaseSecretId: 'durable-ops/ci/migrator',
  vpcSecurityGroupIds: 'sg-0aaa,sg-0bbb',
  vpcSubnetIds: 'subnet-0aaa,subnet-0bbb',
};
const SIDECARS = ['arn:aws:lambda:eu-west-1:123456789012:function:llm-a', 'arn:aws:lambda:eu-west-1:123456789012:function:llm-b'];
/** An OpenTelemetry collector layer for the otelCollectorLayerArn parameter. */
const COLLECTOR_LAYER = 'arn:aws:lambda:eu-west-1:123456789012:layer:otel-collector:1';
/** A separate operator identity provider (issuer and audience) and an operator group. */
const OPERATOR = {
  operatorJwtIssuer: 'https://ops-issuer.ci.example.com/pool',
  operatorJwtAudience: 'ci-ops-audience',
  operatorGroupClaim: 'cognito:groups',
  operatorGroups: 'ops-admins,ops-oncall',
};
/** Two exact origins for the CORS parameter. */
const CORS_ORIGINS = ['https://app.example.com', 'http://localhost:5173'];
/** The optional parameters set: AI on, two model sidecars, an external key secret, two CORS origins, a collector layer. */
const WITH_AI = {
  ...REQUIRED,
  corsAllowedOrigins: CORS_ORIGINS.join(','),
  aiTasks: '1',
  modelLocalUrl: 'lambda:llm-a',
  modelExternalUrl: 'https://api.models.example.com/v1',
  modelExternalName: 'external-model',
  modelExternalKeySecretId: 'durable-ops/ci/model-key',
  modelSidecarFunctionArn: SIDECARS.join(','),
  otelCollectorLayerArn: COLLECTOR_LAYER,
  ...OPERATOR,
};

const FUNCTIONS = {
  api: { handler: 'functions/api.handler', role: 'ApiRole' },
  worker: { handler: 'functions/worker.handler', role: 'WorkerRole' },
  sweeper: { handler: 'functions/sweeper.handler', role: 'SweeperRole' },
  migrate: { handler: 'functions/migrate.handler', role: 'MigrateRole' },
} as const;

const VPC_ACCESS = ':iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole';
const QUEUE_ARN = { 'Fn::GetAtt': ['WakeupQueue', 'Arn'] };
const DLQ_ARN = { 'Fn::GetAtt': ['WakeupDeadLetterQueue', 'Arn'] };

let template: Template;
let withAi: Template;
const dirs: string[] = [];

function lambdaOf(t: Template, name: keyof typeof FUNCTIONS): Resource {
  const fn = Object.values(resourcesOf(t, 'AWS::Lambda::Function')).find((r) => r.Properties.Handler === FUNCTIONS[name].handler);
  if (!fn) throw new Error(`no ${name} function`);
  return fn;
}

function mappingOf(t: Template): Record<string, any> {
  const mappings = Object.values(resourcesOf(t, 'AWS::Lambda::EventSourceMapping'));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

/** The statement active tracing needs: `xray:PutTraceSegments` and `xray:PutTelemetryRecords` on `*` (they take no ARN). */
function isXrayWrite(statement: Record<string, any>): boolean {
  const actions = [statement.Action].flat().sort();
  return statement.Effect === 'Allow' && statement.Resource === '*' && JSON.stringify(actions) === JSON.stringify(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
}

function envOf(t: Template, name: keyof typeof FUNCTIONS): Record<string, unknown> {
  return evaluate(lambdaOf(t, name).Properties.Environment.Variables, t) as Record<string, unknown>;
}

/** A URL whose credentials are CloudFormation dynamic references to `secretId`, to RDS Proxy over TLS. */
function databaseUrlFrom(secretId: string): string {
  const ref = (key: string) => `{{resolve:secretsmanager:${secretId}:SecretString:${key}}}`;
  return `mysql://${ref('username')}:${ref('password')}@${REQUIRED.databaseHost}:3306/durable_ops?ssl=true`;
}

beforeAll(async () => {
  const [plain, ai] = await withLambdaBundles(async () => [await oslsPackage(REQUIRED), await oslsPackage(WITH_AI)]);
  dirs.push(plain.dir, ai.dir);
  expect(plain.output).toContain('Service packaged');
  expect(plain.code).toBe(0);
  expect(ai.code).toBe(0);
  template = readTemplate(plain.dir);
  withAi = readTemplate(ai.dir);
}, 240_000);

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  removeOslsCache();
});

describe('osls package (offline, no AWS credentials)', () => {
  it('has the HTTP API with a JWT authorizer for the owners and one for the operators (the owners\' issuer and audience unless given)', () => {
    const apis = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Api'));
    expect(apis.map((a) => a.Properties.ProtocolType)).toEqual(['HTTP']);
    const jwt = { AuthorizerType: 'JWT', IdentitySource: ['$request.header.Authorization'] };
    const owner = { ...jwt, Name: 'jwt', JwtConfiguration: { Issuer: REQUIRED.jwtIssuer, Audience: [REQUIRED.jwtAudience] } };
    const byName = (t: Template) => Object.values(resourcesOf(t, 'AWS::ApiGatewayV2::Authorizer')).map((a) => a.Properties).sort((a, b) => String(a.Name).localeCompare(String(b.Name)));
    expect(byName(template)).toEqual([owner, { ...owner, Name: 'operatorJwt' }].map((a) => expect.objectContaining(a)));
    expect(byName(withAi)).toEqual(
      [owner, { ...jwt, Name: 'operatorJwt', JwtConfiguration: { Issuer: OPERATOR.operatorJwtIssuer, Audience: [OPERATOR.operatorJwtAudience] } }].map((a) => expect.objectContaining(a)),
    );
  });

  it('gives the api function the operator rule of the parameters, and none by default (every operator route a 404)', () => {
    const rule = (t: Template) => {
      const env = envOf(t, 'api');
      return Object.fromEntries(['OPERATOR_JWT_ISSUER', 'OPERATOR_JWT_AUDIENCE', 'OPERATOR_GROUP_CLAIM', 'OPERATOR_GROUPS', 'OPERATOR_SUBJECTS'].map((name) => [name, env[name]]));
    };
    expect(rule(template)).toEqual({ OPERATOR_JWT_ISSUER: '', OPERATOR_JWT_AUDIENCE: '', OPERATOR_GROUP_CLAIM: '', OPERATOR_GROUPS: '', OPERATOR_SUBJECTS: '' });
    expect(operatorRuleFromConfig(loadConfig(rule(template) as Record<string, string>)), 'no rule').toBeUndefined();
    expect(rule(withAi)).toEqual({
      OPERATOR_JWT_ISSUER: OPERATOR.operatorJwtIssuer,
      OPERATOR_JWT_AUDIENCE: OPERATOR.operatorJwtAudience,
      OPERATOR_GROUP_CLAIM: OPERATOR.operatorGroupClaim,
      OPERATOR_GROUPS: OPERATOR.operatorGroups,
      OPERATOR_SUBJECTS: '',
    });
    expect(operatorRuleFromConfig(loadConfig(rule(withAi) as Record<string, string>))).toEqual({
      issuer: OPERATOR.operatorJwtIssuer,
      audience: OPERATOR.operatorJwtAudience,
      groupClaim: OPERATOR.operatorGroupClaim,
      groups: ['ops-admins', 'ops-oncall'],
      subjects: [],
    });
  });

  it('configures CORS on the HTTP API only for the corsAllowedOrigins parameter, with exactly the lists of lib/http/cors.ts', () => {
    const corsOf = (t: Template) => {
      const apis = Object.values(resourcesOf(t, 'AWS::ApiGatewayV2::Api'));
      expect(apis).toHaveLength(1);
      return (evaluate(apis[0]!.Properties, t) as Record<string, unknown>).CorsConfiguration;
    };
    expect(corsOf(template), 'no origins: no CORS configuration, same-origin only').toBeUndefined();
    expect(corsOf(withAi)).toEqual({
      AllowOrigins: CORS_ORIGINS,
      AllowMethods: [...CORS_ALLOWED_METHODS],
      AllowHeaders: [...CORS_ALLOWED_HEADERS],
      ExposeHeaders: [...CORS_EXPOSED_HEADERS],
      MaxAge: CORS_MAX_AGE_SECONDS,
    });
    expect([...CORS_ALLOWED_METHODS].sort(), 'the methods of the routes').toEqual([...new Set(API_ROUTES.map((r) => r.method))].sort());
  });

  it('speaks payload format 2.0, answers within API Gateway\'s 30 s, throttles every route, and reserves the sweeper concurrency', () => {
    const integrations = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Integration'));
    expect(integrations.length).toBeGreaterThan(0);
    for (const integration of integrations) expect(integration.Properties.PayloadFormatVersion).toBe('2.0');
    expect(lambdaOf(template, 'api').Properties.Timeout as number).toBeLessThan(30);
    const stages = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Stage'));
    expect(stages).toHaveLength(1);
    expect(stages[0]!.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: expect.any(Number), ThrottlingBurstLimit: expect.any(Number) });
    expect(lambdaOf(template, 'sweeper').Properties.ReservedConcurrentExecutions).toBeGreaterThanOrEqual(1);
  });

  it('routes exactly API_ROUTES to the api function: every operator route behind the operator authorizer, every owner route behind the owners\' one', () => {
    const authorizers = Object.entries(resourcesOf(template, 'AWS::ApiGatewayV2::Authorizer'));
    const authorizerId = (name: string) => authorizers.find(([, a]) => a.Properties.Name === name)?.[0];
    expect(authorizerId('jwt')).toBeDefined();
    expect(authorizerId('operatorJwt')).toBeDefined();
    const routes = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Route'));
    const deployed = Object.fromEntries(routes.map((r) => [r.Properties.RouteKey as string, r.Properties]));
    // Each route under each method it answers (a public GET also answers HEAD, which an HTTP API GET route does not match).
    expect(Object.keys(deployed).sort()).toEqual(API_ROUTES.flatMap((r) => methodsOf(r).map((method) => `${method} ${r.path}`)).sort());
    for (const route of API_ROUTES) {
      const properties = deployed[`${route.method} ${route.path}`]!;
      if ((route as { access: string }).access === 'public') {
        for (const method of methodsOf(route)) {
          expect(deployed[`${method} ${route.path}`]?.AuthorizationType, `${method} ${route.path}`).toBeUndefined();
          expect(deployed[`${method} ${route.path}`]?.AuthorizerId, `${method} ${route.path}`).toBeUndefined();
        }
      } else {
        const expected = route.access === 'operator' ? authorizerId('operatorJwt') : authorizerId('jwt');
        expect(route.access === 'operator', `${route.path}: operator routes are exactly /api/ops/*`).toBe(route.path.startsWith('/api/ops/'));
        expect(properties, `${route.method} ${route.path}`).toMatchObject({ AuthorizationType: 'JWT', AuthorizerId: { Ref: expected } });
        expect(properties.AuthorizationScopes, 'scopes are checked in the Lambda (404, never 403)').toBeUndefined();
      }
    }
    const integrations = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Integration'));
    expect(integrations.map((i) => i.Properties.IntegrationUri)).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/^Api/), 'Arn'] }]);
  });

  it('packages the api, worker, sweeper and migrate functions on Node 22 (nodejs22.x: Node.js 20 is end of life), each with a role of its own', () => {
    const functions = Object.values(resourcesOf(template, 'AWS::Lambda::Function'));
    expect(functions.map((f) => f.Properties.Handler).sort()).toEqual(Object.values(FUNCTIONS).map((f) => f.handler).sort());
    for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
      const fn = lambdaOf(template, name);
      expect(fn.Properties.Runtime).toBe('nodejs22.x');
      expect(fn.Properties.Role).toEqual({ 'Fn::GetAtt': [FUNCTIONS[name].role, 'Arn'] });
    }
    expect(resourcesOf(template, 'AWS::IAM::Role')).not.toHaveProperty('IamRoleLambdaExecution');
  });

  it('gives each role exactly the actions its function calls, on its own resources', () => {
    const expected: Record<string, string[]> = {
      ApiRole: ['sqs:DeleteMessage', 'sqs:ReceiveMessage', 'sqs:SendMessage'],
      WorkerRole: ['lambda:InvokeFunction', 's3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage', 'sqs:SendMessage'],
      SweeperRole: ['sqs:SendMessage'],
      MigrateRole: [],
    };
    expect(Object.keys(resourcesOf(template, 'AWS::IAM::Role')).sort()).toEqual(Object.keys(expected).sort());
    for (const [roleId, actions] of Object.entries(expected)) {
      const role = template.Resources[roleId]!;
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }]);
      expect((role.Properties.ManagedPolicyArns as unknown[]).map((arn) => evaluate(arn, template))).toEqual([
        { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, VPC_ACCESS]] },
      ]);
      // The X-Ray write statement, the one '*' resource, is every role's and is checked by the tracing test below.
      const statements = statementsOf(template, roleId).filter(({ statement }) => !isXrayWrite(statement));
      expect(actionsOf(statements), roleId).toEqual(actions);
      for (const { statement } of statements) {
        expect(statement.Effect).toBe('Allow');
        expect(JSON.stringify(statement.Resource), `${roleId}: no wildcard resource`).not.toBe('"*"');
        const actionList = [statement.Action].flat() as string[];
        // SQS: the wake-up queue, except the API's redrive, which reads and deletes on the DLQ only.
        const redrive = roleId === 'ApiRole' && actionList.includes('sqs:ReceiveMessage');
        if (actionList.some((a) => a.startsWith('sqs:'))) expect(statement.Resource).toEqual(redrive ? DLQ_ARN : QUEUE_ARN);
      }
    }
    const worker = statementsOf(template, 'WorkerRole').map(({ statement }) => statement);
    expect(worker.find((s) => [s.Action].flat().includes('s3:PutObject'))?.Resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': ['ResultsBucket', 'Arn'] }, '/results/*']] });
    expect(worker.find((s) => [s.Action].flat().includes('s3:ListBucket'))?.Resource).toEqual({ 'Fn::GetAtt': ['ResultsBucket', 'Arn'] });
    // Only the API redrives dead letters (the operator route), so only it is told where the DLQ is.
    expect(envOf(template, 'api').SQS_DLQ_URL).toEqual({ Ref: 'WakeupDeadLetterQueue' });
    for (const name of ['worker', 'sweeper', 'migrate'] as const) expect(envOf(template, name)).not.toHaveProperty('SQS_DLQ_URL');
  });

  it('traces every function actively (X-Ray), each role may write its segments, and the OTel variables default to off', () => {
    for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
      const fn = lambdaOf(template, name);
      expect(fn.Properties.TracingConfig, name).toEqual({ Mode: 'Active' });
      expect(statementsOf(template, FUNCTIONS[name].role).filter(({ statement }) => isXrayWrite(statement)), FUNCTIONS[name].role).toHaveLength(1);
      expect(envOf(template, name), name).toMatchObject({ OTEL_TRACES_EXPORTER: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' });
      expect(tracingSettingsFromEnv(envOf(template, name) as Record<string, string>).exporter, `${name}: no spans sent by default`).toBe('none');
    }
    // The collector layer only when the parameter names one (an element that is AWS::NoValue is dropped).
    const layersOf = (t: Template, name: keyof typeof FUNCTIONS) =>
      (evaluate(lambdaOf(t, name).Properties.Layers ?? [], t) as unknown[]).filter((layer) => JSON.stringify(layer) !== '{"Ref":"AWS::NoValue"}');
    for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
      expect(layersOf(template, name), name).toEqual([]);
      expect(layersOf(withAi, name), name).toEqual([COLLECTOR_LAYER]);
    }
    // HTTP APIs have no X-Ray tracing: nothing may claim to turn it on for the API.
    expect(JSON.stringify(resourcesOf(template, 'AWS::ApiGatewayV2::Stage'))).not.toContain('Tracing');
  });

  it('grants lambda:InvokeFunction only when model sidecars are named, on exactly those functions', () => {
    const sidecar = statementsOf(template, 'WorkerRole').filter(({ statement }) => [statement.Action].flat().includes('lambda:InvokeFunction'));
    expect(sidecar.map((s) => s.condition)).toEqual(['HasModelSidecar']);
    expect(conditionHolds(template, 'HasModelSidecar')).toBe(false);
    expect(conditionHolds(withAi, 'HasModelSidecar')).toBe(true);
    const granted = statementsOf(withAi, 'WorkerRole').find(({ statement }) => statement.Action === 'lambda:InvokeFunction')!.statement;
    expect(evaluate(granted.Resource, withAi)).toEqual([...SIDECARS, ...SIDECARS.map((arn) => `${arn}:*`)]);
  });

  it('wakes the worker from the queue, which redrives to the DLQ, with visibility at least 6 × the worker timeout', () => {
    const queue = template.Resources.WakeupQueue!;
    const dlq = template.Resources.WakeupDeadLetterQueue!;
    expect([queue.Type, dlq.Type]).toEqual(['AWS::SQS::Queue', 'AWS::SQS::Queue']);
    expect(queue.Properties.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': ['WakeupDeadLetterQueue', 'Arn'] }, maxReceiveCount: 5 });
    expect(dlq.Properties.MessageRetentionPeriod).toBeGreaterThan(queue.Properties.MessageRetentionPeriod ?? 345_600);
    const workerTimeout = lambdaOf(template, 'worker').Properties.Timeout as number;
    expect(workerTimeout).toBeGreaterThan(0);
    expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerTimeout);

    const mapping = mappingOf(template);
    expect(mapping.EventSourceArn).toEqual(QUEUE_ARN);
    expect(mapping.FunctionName).toEqual({ 'Fn::GetAtt': ['WorkerLambdaFunction', 'Arn'] });
    expect(mapping.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(mapping.ScalingConfig.MaximumConcurrency).toBeGreaterThanOrEqual(2);
    expect(mapping.ScalingConfig.MaximumConcurrency).toBeLessThanOrEqual(1000);
  });

  it('gives each worker invocation one wake-up, with room for two owners at their running limit and others besides', () => {
    const mapping = mappingOf(template);
    // One record per invocation: a long run pins only its own invocation, never a short one received with it.
    expect(mapping.BatchSize).toBe(1);
    expect(mapping).not.toHaveProperty('MaximumBatchingWindowInSeconds');
    // README "Sizing the worker": W ≥ k·L + h. With the default running limit, two flooding owners leave h ≥ 1 runs,
    // so another owner's operation starts within one wake-up cycle.
    const W = mapping.ScalingConfig.MaximumConcurrency as number;
    const L = loadConfig({}).CAPACITY_RUNNING_PER_OWNER;
    expect(W).toBe(10);
    expect(W - 2 * L).toBeGreaterThanOrEqual(1);
    // The local stack's poller runs the same execution model (lib/local/sqs-poller.ts).
    expect({ batchSize: mapping.BatchSize, maxConcurrentBatches: W }).toEqual({
      batchSize: SQS_POLLER_DEFAULTS.batchSize,
      maxConcurrentBatches: SQS_POLLER_DEFAULTS.maxConcurrentBatches,
    });
  });

  it('runs the sweeper on a schedule, and nothing triggers the migrate function', () => {
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule'));
    expect(rules.map((r) => r.Properties)).toEqual([
      expect.objectContaining({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED', Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': ['SweeperLambdaFunction', 'Arn'] } })] }),
    ]);
    const migrate = lambdaOf(template, 'migrate');
    expect(migrate.Properties.Timeout).toBe(300);
    expect(migrate.Properties.ReservedConcurrentExecutions).toBe(1);
    const invokers = Object.values(template.Resources).filter((r) => r.Type !== 'AWS::Lambda::Version' && JSON.stringify(r.Properties).includes('"MigrateLambdaFunction"'));
    expect(invokers).toEqual([]);
  });

  it('puts every function in the VPC given by the parameters', () => {
    for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
      expect(evaluate(lambdaOf(template, name).Properties.VpcConfig, template), name).toEqual({
        SecurityGroupIds: REQUIRED.vpcSecurityGroupIds.split(','),
        SubnetIds: REQUIRED.vpcSubnetIds.split(','),
      });
    }
  });

  it('has a private, encrypted, TLS-only results bucket with a lifecycle rule, named to the worker only', () => {
    const bucket = template.Resources.ResultsBucket!;
    expect(bucket.Type).toBe('AWS::S3::Bucket');
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toMatch(/^(AES256|aws:kms)$/);
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({ BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true });
    const [rule] = bucket.Properties.LifecycleConfiguration.Rules;
    expect(rule).toMatchObject({ Status: 'Enabled', Prefix: 'results/', ExpirationInDays: expect.any(Number) });
    const policy = Object.values(resourcesOf(template, 'AWS::S3::BucketPolicy')).find((p) => JSON.stringify(p.Properties.Bucket) === '{"Ref":"ResultsBucket"}');
    expect(policy?.Properties.PolicyDocument.Statement).toEqual([expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]);
    expect(envOf(template, 'worker').RESULTS_BUCKET).toEqual({ Ref: 'ResultsBucket' });
    for (const name of ['api', 'sweeper', 'migrate'] as const) expect(envOf(template, name)).not.toHaveProperty('RESULTS_BUCKET');
  });

  it('configures the capacity limits (docs/design.md §4), the pool and the AI routes, an empty parameter meaning unset', () => {
    for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
      expect(envOf(template, name), name).toMatchObject({
        DATABASE_CREDENTIALS_VERSION: '1',
        // The worker's pool covers its batch's record (one) plus one ledger connection: lib/config.ts's minimum, 2.
        DB_POOL_SIZE: name === 'worker' ? String(mappingOf(template).BatchSize + 1) : '2',
        SQS_QUEUE_URL: { Ref: 'WakeupQueue' },
        CAPACITY_PER_OWNER: '10',
        CAPACITY_GLOBAL: '1000',
        CAPACITY_RETRY_AFTER_SECONDS: '5',
        CAPACITY_CONFIG_FILE: '',
        AI_TASKS: '0',
        MODEL_LOCAL_URL: '',
        MODEL_EXTERNAL_URL: '',
      });
    }
    expect(envOf(withAi, 'worker')).toMatchObject({ AI_TASKS: '1', MODEL_LOCAL_URL: 'lambda:llm-a', MODEL_EXTERNAL_NAME: 'external-model' });
    const workerPool = envOf(template, 'worker').DB_POOL_SIZE as string;
    expect(workerPool).toBe('2');
    expect(loadConfig({ DB_POOL_SIZE: workerPool }).DB_POOL_SIZE).toBe(2);
    expect(() => loadConfig({ DB_POOL_SIZE: String(Number(workerPool) - 1) }), 'the pool is at the minimum lib/config.ts accepts').toThrow(ConfigError);
  });

  it('holds no plaintext secret: database URLs and the model key are Secrets Manager dynamic references', () => {
    for (const t of [template, withAi]) {
      for (const name of ['api', 'worker', 'sweeper'] as const) expect(envOf(t, name).DATABASE_URL, name).toBe(databaseUrlFrom(REQUIRED.databaseSecretId));
      expect(envOf(t, 'migrate').DATABASE_URL).toBe(databaseUrlFrom(REQUIRED.migrationDatabaseSecretId));
      for (const name of Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[]) {
        for (const [variable, value] of Object.entries(envOf(t, name))) {
          if (/KEY|SECRET|PASSWORD|TOKEN|DATABASE_URL/.test(variable)) {
            // Every credential-looking variable is (or embeds, for a URL) a dynamic reference, never a literal.
            expect(typeof value === 'string' && value.includes('{{resolve:secretsmanager:'), `${name} ${variable}`).toBe(true);
            expect((value as string).replace(/\{\{resolve:[^}]+\}\}/g, ''), `${name} ${variable}`).not.toMatch(/:[^/@{}]+@/);
          }
        }
      }
    }
    expect(envOf(template, 'worker')).not.toHaveProperty('MODEL_EXTERNAL_API_KEY');
    expect(envOf(withAi, 'worker').MODEL_EXTERNAL_API_KEY).toBe('{{resolve:secretsmanager:durable-ops/ci/model-key}}');
    for (const name of ['api', 'sweeper', 'migrate'] as const) expect(envOf(withAi, name)).not.toHaveProperty('MODEL_EXTERNAL_API_KEY');
  });

  it('outputs the queue, the DLQ, the results bucket and the migrate function name', () => {
    expect(template.Outputs).toMatchObject({
      WakeupQueueUrl: { Value: { Ref: 'WakeupQueue' } },
      WakeupDeadLetterQueueUrl: { Value: { Ref: 'WakeupDeadLetterQueue' } },
      ResultsBucketName: { Value: { Ref: 'ResultsBucket' } },
      MigrateFunctionName: { Value: { Ref: 'MigrateLambdaFunction' } },
    });
  });

  it('the bundled migrate function carries every migration (the static provider survives bundling)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'durable-ops-bundle-'));
    dirs.push(dir);
    const script = "const { handler } = await import(process.argv[1]); console.log(JSON.stringify(await handler({})));";
    const run = await withLambdaBundles(() =>
      runNode(['--input-type=module', '-e', script, join(ROOT, 'functions/migrate.mjs')], {
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'bundle.sqlite')}`, POWERTOOLS_LOG_LEVEL: 'SILENT' },
      }),
    );
    expect(run.code, run.output).toBe(0);
    const answer = JSON.parse(run.output.trim().split('\n').at(-1)!) as { results: { migrationName: string; status: string }[] };
    expect(answer.results.map((r) => r.migrationName)).toEqual(Object.keys(migrations).sort());
    expect(answer.results.every((r) => r.status === 'Success')).toBe(true);
    // It may wait for another test file's build and use of the bundles (withLambdaBundles).
  }, 300_000);
});

describe('a broken serverless.yml fails packaging', () => {
  it('an unknown key is an error (configValidationMode: error), not a warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'durable-ops-broken-'));
    dirs.push(dir);
    const yaml = readFileSync(join(ROOT, 'serverless.yml'), 'utf8');
    expect(yaml).toMatch(/^configValidationMode: error$/m);
    expect(yaml).toMatch(/^ {2}memorySize: 512$/m);
    writeFileSync(join(dir, 'serverless.yml'), yaml.replace(/^ {2}memorySize: 512$/m, '  memorySize: 512\n  memorySizee: 512'));
    const run = await oslsPackage(REQUIRED, dir);
    dirs.push(run.dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("unrecognized property 'memorySizee'");
  }, 120_000);

  it('a missing required parameter is an error, never a placeholder', async () => {
    const { jwtIssuer: _omitted, ...rest } = REQUIRED;
    const run = await oslsPackage(rest);
    dirs.push(run.dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toMatch(/Cannot resolve variable at "provider\.httpApi\.authorizers\.jwt\.issuerUrl"/);
  }, 120_000);
});
