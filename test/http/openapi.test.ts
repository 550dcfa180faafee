import { compileErrors, validate } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { strategySnapshotTask } from '../../lib/features/strategy-snapshot/strategy-snapshot-task.js';
import { STRATEGY_SNAPSHOT_NOTE_KIND } from '../../lib/features/strategy-snapshot/strategy-snapshot-output.js';
import { createApiHandler, type ApiEvent } from '../../lib/http/api-handler.js';
import { API_ROUTES, methodsOf, OPENAPI_DOCUMENT_PATH, OPERATOR_OPENAPI_DOCUMENT_PATH } from '../../lib/http/api-routes.js';
import { OPS_READ_SCOPE, OPS_WRITE_SCOPE } from '../../lib/http/auth.js';
import { BEARER_SCHEME, buildOpenApiDocument, openApiJson } from '../../lib/http/openapi.js';
import type { ApiRoute } from '../../lib/http/route-types.js';
import { upsertNote } from '../../lib/jobs/workspace-note.repository.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { LOCAL_MAX_BODY_BYTES, startLocalHttpServer } from '../../lib/local/local-http-server.js';
import { FAILURE_CODES } from '../../lib/operations/lifecycle/failure-code.js';
import { silentLogger } from '../../lib/logger.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';
import { buildLedgerFixture, testRecoveryModules } from '../recovery/ops-fixtures.js';
import { apiEvent, lambdaContext, OPERATOR_CLAIMS, parseResponse, type ApiEventInput, type ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** The document exactly as `GET /api/openapi.json` serves it. */
const doc = JSON.parse(openApiJson(API_ROUTES));

/** The operator document exactly as `GET /api/ops/openapi.json` serves it. */
const operatorDoc = JSON.parse(openApiJson(API_ROUTES, 'operator'));

/** The routes the operator document describes: the operator surface and its own document. */
const OPERATOR_DOCUMENTED_ROUTES = API_ROUTES.filter((route) => route.access === 'operator');

/** The routes the public document describes: every route but the operator surface, which stays unconfirmed (docs/design.md §8). */
const DOCUMENTED_ROUTES = API_ROUTES.filter((route) => route.access !== 'operator');

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document as `METHOD path` with its operation object. */
function documentedOperations(document: any): Array<[string, any]> {
  return Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]): [string, any] => [`${method.toUpperCase()} ${path}`, operation]),
  );
}

const operationOf = (route: Pick<ApiRoute, 'method' | 'path'>) => doc.paths[route.path]?.[route.method.toLowerCase()];
const keyOf = (route: Pick<ApiRoute, 'method' | 'path'>) => `${route.method} ${route.path}`;

/**
 * The statuses each route answers, as docs/design.md §7 and the README's "HTTP API" table list them, plus 405 (any route:
 * its path under another method), 413 and 415 (a route that takes a body: the local server's 1 MiB cap, a body not
 * declared as JSON), 400 (a route that takes no body, sent one), 500 (any route) and
 * 503 (any route that reads or writes the database: all but the two documents) —
 * pinned here, independently of the route docs, so a doc that drops or invents a status fails.
 */
const EXPECTED_STATUSES: Record<string, number[]> = {
  'POST /api/operations': [200, 202, 400, 401, 403, 404, 405, 413, 415, 422, 429, 500, 503],
  'GET /api/operations': [200, 400, 401, 405, 500, 503],
  'GET /api/operations/{id}': [200, 304, 400, 401, 404, 405, 500, 503],
  'POST /api/operations/{id}/cancel': [200, 400, 401, 404, 405, 409, 500, 503],
  'POST /api/operations/{id}/retry': [202, 400, 401, 403, 404, 405, 409, 429, 500, 503],
  'GET /api/notifications': [200, 400, 401, 405, 500, 503],
  'GET /api/me/settings': [200, 400, 401, 405, 500, 503],
  'PATCH /api/me/settings': [200, 400, 401, 405, 413, 415, 500, 503],
  'POST /api/jobs': [201, 400, 401, 405, 413, 415, 500, 503],
  'GET /api/jobs/{jobId}': [200, 400, 401, 404, 405, 500, 503],
  'POST /api/jobs/{jobId}/strategy-snapshot': [200, 202, 400, 401, 403, 404, 405, 422, 429, 500, 503],
  'GET /api/jobs/{jobId}/strategy-snapshot': [200, 400, 401, 404, 405, 500, 503],
  'GET /api/openapi.json': [200, 400, 405, 500],
};

/** The same for the operator document: the README's "HTTP API" table rows of the operator surface. */
const EXPECTED_OPERATOR_STATUSES: Record<string, number[]> = {
  'GET /api/ops/operations': [200, 400, 401, 404, 405, 500, 503],
  'GET /api/ops/operations/{id}': [200, 400, 401, 404, 405, 500, 503],
  'POST /api/ops/operations/{id}/cancel': [200, 400, 401, 404, 405, 409, 500, 503],
  'POST /api/ops/operations/{id}/retry': [202, 400, 401, 403, 404, 405, 409, 429, 500, 503],
  'GET /api/ops/capacity': [200, 400, 401, 404, 405, 500, 503],
  'GET /api/ops/recovery': [200, 400, 401, 404, 405, 500, 503],
  'POST /api/ops/recovery/{id}/resolve-unknown': [200, 400, 401, 404, 405, 409, 413, 415, 500, 503],
  'POST /api/ops/dlq/redrive': [200, 400, 401, 404, 405, 409, 413, 415, 500, 503],
  'GET /api/ops/sweeps': [200, 400, 401, 404, 405, 500, 503],
  'GET /api/ops/throughput': [200, 400, 401, 404, 405, 500, 503],
  'GET /api/ops/openapi.json': [200, 400, 401, 404, 405, 500],
};

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document: the 3.1 schema and the semantic rules (unique operationIds, path parameters)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.specification).toBe('OpenAPI');
    expect(result.warnings).toEqual([]);

    // The validator is not vacuous: the same document with one malformed response is refused.
    const broken = structuredClone(doc);
    broken.paths['/api/jobs'].post.responses['201'].content = 'application/json';
    expect((await validate(broken)).valid).toBe(false);
  });

  it('names the API and carries the package version', async () => {
    const pkg = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(doc.info).toMatchObject({ title: 'durable-ops API', version: pkg.version });
    expect(doc.info.description).toContain('problem+json');
  });

  it('covers every owner and public route of API_ROUTES (method and path), and nothing else — never an operator route', () => {
    expect(documentedOperations(doc).map(([key]) => key).sort()).toEqual(DOCUMENTED_ROUTES.map(keyOf).sort());
    expect(Object.keys(EXPECTED_STATUSES).sort()).toEqual(DOCUMENTED_ROUTES.map(keyOf).sort());
    expect(JSON.stringify(doc)).not.toContain('/api/ops/');
    expect(JSON.stringify(doc)).not.toContain('ops:read');
  });

  it('every owner route requires the bearer JWT and documents its 401 problem; only the document itself is public', () => {
    expect(doc.components.securitySchemes[BEARER_SCHEME]).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }));
    for (const route of DOCUMENTED_ROUTES) {
      const operation = operationOf(route);
      if (route.access === 'public') {
        expect(operation.security, keyOf(route)).toEqual([]);
        expect(operation.responses['401'], keyOf(route)).toBeUndefined();
        continue;
      }
      expect(operation.security, keyOf(route)).toEqual([{ [BEARER_SCHEME]: [] }]);
      // One body shape per 401, so a generated client reads `code` without narrowing; API Gateway's own body is described
      // beside it, in an extension no client generator reads as a response.
      expect(operation.responses['401'].content, keyOf(route)).toEqual({ 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } });
      expect(operation.responses['401']['x-api-gateway-body'], keyOf(route)).toMatchObject({
        contentType: 'application/json',
        schema: { type: 'object', required: ['message'], properties: { message: { const: 'Unauthorized' } }, additionalProperties: false },
      });
    }
    expect(API_ROUTES.filter((route) => route.access === 'public').map(keyOf)).toEqual([`GET ${OPENAPI_DOCUMENT_PATH}`]);
  });

  it('each route documents exactly the statuses docs/design.md §7 lists for it', () => {
    for (const route of DOCUMENTED_ROUTES) {
      const statuses = Object.keys(operationOf(route).responses).map(Number).sort((a, b) => a - b);
      expect(statuses, keyOf(route)).toEqual(EXPECTED_STATUSES[keyOf(route)]);
    }
  });

  it('names servers, contact and a described tag for every operation, and a description for each', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(doc.info.contact).toEqual({ name: expect.any(String) });
    const tags = new Map<string, string>(doc.tags.map((tag: { name: string; description: string }) => [tag.name, tag.description]));
    for (const [key, operation] of documentedOperations(doc)) {
      expect(operation.tags, key).toHaveLength(1);
      expect(tags.get(operation.tags[0]), key).toMatch(/\w/);
      expect(operation.description, key).toMatch(/\w/);
      expect(operation.operationId, key).toMatch(/^[a-z][A-Za-z]+$/);
    }
  });

  it('failure.code is the closed set of FAILURE_CODES, named FailureCode, wherever an operation shows its failure', () => {
    expect(doc.components.schemas.FailureCode).toMatchObject({ type: 'string', enum: [...FAILURE_CODES] });
    expect(doc.components.schemas.OperationDto.properties.failure.properties.code).toEqual({ $ref: '#/components/schemas/FailureCode' });
    expect(doc.components.schemas.NotificationDto.properties.failure.properties.code).toEqual({ $ref: '#/components/schemas/FailureCode' });
    const timeline = operatorDoc.components.schemas.TimelineEvent.properties.failureCode;
    expect(timeline).toEqual({ anyOf: [{ $ref: '#/components/schemas/FailureCode' }, { type: 'null' }] });
  });

  it('every 405 names the path’s methods in Allow; 413 and 415 are documented exactly where a body is taken, a body’s 400 everywhere else', () => {
    for (const document of [doc, operatorDoc]) {
      for (const [key, operation] of documentedOperations(document)) {
        expect(operation.responses['405'].headers.Allow, key).toMatchObject({ required: true, schema: { type: 'string' } });
        expect(operation.responses['413'] !== undefined, key).toBe(operation.requestBody !== undefined);
        expect(operation.responses['415'] !== undefined, key).toBe(operation.requestBody !== undefined);
        if (operation.requestBody === undefined) expect(operation.responses['400'].description, key).toContain('this route takes none');
      }
    }
    expect(doc.paths['/api/jobs'].post.responses['413'].description).toContain(`${LOCAL_MAX_BODY_BYTES / 1024 / 1024} MiB`);
  });

  it('GET /api/operations/{id} is a conditional GET: If-None-Match in, a strong ETag on 200 and 304, and 304 has no content', () => {
    const operation = doc.paths['/api/operations/{id}'].get;
    expect(operation.parameters.find((p: any) => p.name === 'If-None-Match')).toMatchObject({ in: 'header', required: false, schema: { type: 'string' } });
    for (const status of ['200', '304']) {
      expect(operation.responses[status].headers.ETag, status).toMatchObject({ required: true, schema: { type: 'string', pattern: '^"[^"]*"$' } });
    }
    expect(operation.responses['304'].content).toBeUndefined();
    const conditional = documentedOperations(doc).filter(([, op]) => op.responses['304'] !== undefined).map(([key]) => key);
    expect(conditional).toEqual(['GET /api/operations/{id}']);
  });

  it('every error is application/problem+json with the Problem schema; every 429 says Retry-After', () => {
    for (const [key, operation] of documentedOperations(doc)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (Number(status) < 400) continue;
        expect(response.content['application/problem+json'].schema, `${key} ${status}`).toEqual({ $ref: '#/components/schemas/Problem' });
        if (status === '429') expect(response.headers['Retry-After'], key).toMatchObject({ required: true, schema: { type: 'integer' } });
      }
    }
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail', 'code']);
  });

  it('the two admission routes, and only they, require the Idempotency-Key header with its docs/design.md §7 pattern', () => {
    const withKey = documentedOperations(doc)
      .filter(([, operation]) => (operation.parameters ?? []).some((p: any) => p.in === 'header' && p.name === 'Idempotency-Key'))
      .map(([key]) => key);
    expect(withKey.sort()).toEqual(['POST /api/jobs/{jobId}/strategy-snapshot', 'POST /api/operations']);
    const header = doc.paths['/api/operations'].post.parameters.find((p: any) => p.name === 'Idempotency-Key');
    expect(header).toMatchObject({ in: 'header', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } });
  });

  it('request bodies and path parameters come from the zod schemas the services parse with', () => {
    expect(doc.paths['/api/operations'].post.requestBody).toMatchObject({ required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/AdmitRequest' } } } });
    expect(doc.components.schemas.AdmitRequest).toMatchObject({ required: ['taskType', 'subject'], additionalProperties: false });
    expect(doc.paths['/api/me/settings'].patch.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OwnerSettingsPatch' });
    expect(doc.paths['/api/jobs'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateJob' });
    const limit = doc.paths['/api/operations'].get.parameters.find((p: any) => p.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } });
    const id = doc.paths['/api/operations/{id}'].get.parameters.find((p: any) => p.name === 'id');
    expect(id).toMatchObject({ in: 'path', required: true });
  });

  it('a route whose doc disagrees with its path template, or reuses an operationId, cannot be documented', () => {
    const route = API_ROUTES.find((candidate) => candidate.path === '/api/operations/{id}' && candidate.method === 'GET');
    if (!route) throw new Error('GET /api/operations/{id} is missing');
    expect(() => buildOpenApiDocument([{ ...route, path: '/api/operations/{operationId}' } as ApiRoute])).toThrow(/path parameters/);
    expect(() => buildOpenApiDocument([{ ...route, doc: { ...route.doc, pathParams: undefined } } as ApiRoute])).toThrow(/path parameters/);
    expect(() => buildOpenApiDocument([{ ...route, doc: { ...route.doc, success: {} } } as ApiRoute])).toThrow(/no success/);
    expect(() => buildOpenApiDocument([route, { ...route, path: '/api/operations/{id}/again' }])).toThrow(/operationId getOperation is used twice/);
  });
});

describe('the operator OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document covering exactly the operator routes, each behind the bearer JWT with its scope', async () => {
    const result = await validate(structuredClone(operatorDoc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
    expect(operatorDoc.info).toMatchObject({ title: 'durable-ops operator API', version: doc.info.version, contact: doc.info.contact });
    expect(operatorDoc.servers).toEqual(doc.servers);
    expect(documentedOperations(operatorDoc).map(([key]) => key).sort()).toEqual(OPERATOR_DOCUMENTED_ROUTES.map(keyOf).sort());
    expect(Object.keys(EXPECTED_OPERATOR_STATUSES).sort()).toEqual(OPERATOR_DOCUMENTED_ROUTES.map(keyOf).sort());
    for (const route of OPERATOR_DOCUMENTED_ROUTES) {
      if (route.access !== 'operator') throw new Error('unreachable');
      const operation = operatorDoc.paths[route.path][route.method.toLowerCase()];
      expect(operation.security, keyOf(route)).toEqual([{ [BEARER_SCHEME]: [route.scope] }]);
      const statuses = Object.keys(operation.responses).map(Number).sort((a, b) => a - b);
      expect(statuses, keyOf(route)).toEqual(EXPECTED_OPERATOR_STATUSES[keyOf(route)]);
    }
  });
});

describe('GET /api/ops/openapi.json', () => {
  let app: ApiTestApp;
  beforeAll(async () => {
    app = await createApiTestApp('sqlite');
  });
  afterAll(async () => app?.drop());

  it('answers ops:read callers the operator document (private to them), and everyone else exactly as an unknown path', async () => {
    const get = async (scope: string | undefined, path = OPERATOR_OPENAPI_DOCUMENT_PATH, method = 'GET') => {
      const event = apiEvent({ method, path, owner: 'caller', claims: OPERATOR_CLAIMS });
      if (scope !== undefined) event.requestContext.authorizer.jwt.claims.scope = scope;
      return parseResponse(await app.handler(event, lambdaContext()));
    };
    const reader = await get(OPS_READ_SCOPE);
    expect(reader.status).toBe(200);
    expect(reader.headers['cache-control']).toBe('private, max-age=300');
    expect(reader.text).toBe(openApiJson(API_ROUTES, 'operator'));
    const unknown = await get(OPS_READ_SCOPE, '/api/ops/nowhere');
    expect(unknown.status).toBe(404);
    for (const scope of [undefined, '', OPS_WRITE_SCOPE, 'ops:reader']) {
      for (const method of ['GET', 'POST']) {
        const hidden = await get(scope, OPERATOR_OPENAPI_DOCUMENT_PATH, method);
        expect(hidden.status, `${method} with scope ${scope}`).toBe(404);
        expect(hidden.json, `${method} with scope ${scope}`).toEqual(unknown.json);
        expect(hidden.headers).not.toHaveProperty('allow');
      }
    }
    expect((await get(OPS_READ_SCOPE, OPERATOR_OPENAPI_DOCUMENT_PATH, 'POST')).headers.allow).toBe('GET');
  });
});

describe('GET /api/openapi.json', () => {
  it('answers 200 application/json without a token, and without resolving the API’s dependencies (no database on a cold start)', async () => {
    const handler = createApiHandler(() => Promise.reject(new Error('the document route must not need the dependencies')));
    const response = parseResponse(await handler(apiEvent({ method: 'GET', path: OPENAPI_DOCUMENT_PATH, owner: null }), lambdaContext()));
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['cache-control']).toBe('public, max-age=300');
    expect(response.text).toBe(openApiJson(API_ROUTES));

    // The public route opens nothing else: an owner route without claims is still a 401.
    const owner = parseResponse(await handler(apiEvent({ method: 'GET', path: '/api/operations', owner: null }), lambdaContext()));
    expect(owner.status).toBe(401);
  });

  it('HEAD answers like GET without a token — same status and headers, no body — and is in the 405 Allow list', async () => {
    const handler = createApiHandler(() => Promise.reject(new Error('the document route must not need the dependencies')));
    const get = await handler(apiEvent({ method: 'GET', path: OPENAPI_DOCUMENT_PATH, owner: null }), lambdaContext());
    const head = await handler(apiEvent({ method: 'HEAD', path: OPENAPI_DOCUMENT_PATH, owner: null }), lambdaContext());
    expect(head.statusCode).toBe(200);
    expect(head.headers).toEqual(get.headers);
    expect(head.body).toBeUndefined();
    const post = parseResponse(await handler(apiEvent({ method: 'POST', path: OPENAPI_DOCUMENT_PATH, owner: 'head-test' }), lambdaContext()));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('is built once per process: every answer is the same cached text', () => {
    expect(openApiJson(API_ROUTES)).toBe(openApiJson(API_ROUTES));
    expect(JSON.parse(openApiJson(API_ROUTES))).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(API_ROUTES))));
  });
});

describe('the local HTTP server', () => {
  const SECRET = 'a-test-secret-of-at-least-32-characters!';
  let app: ApiTestApp;
  let server: Awaited<ReturnType<typeof startLocalHttpServer>>;
  const events: ApiEvent[] = [];

  beforeAll(async () => {
    app = await createApiTestApp('sqlite');
    server = await startLocalHttpServer({
      port: 0,
      devJwtSecret: SECRET,
      logger: silentLogger,
      handler: async (event, context) => (events.push(event), app.handler(event, context)),
    });
  });
  afterAll(async () => {
    await server?.close();
    await app?.drop();
  });

  it('serves the document without a token (no claims reach the handler) while owner routes still need one', async () => {
    const response = await fetch(`${server.url}${OPENAPI_DOCUMENT_PATH}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.text()).toBe(openApiJson(API_ROUTES));
    expect(events.at(-1)?.requestContext.authorizer).toBeUndefined();

    const withBadToken = await fetch(`${server.url}${OPENAPI_DOCUMENT_PATH}`, { headers: { authorization: 'Bearer not.a.token' } });
    expect(withBadToken.status).toBe(200);

    // HEAD (curl -I, link checkers): public too, the GET's headers, no body.
    const head = await fetch(`${server.url}${OPENAPI_DOCUMENT_PATH}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json');
    expect(await head.text()).toBe('');
    expect(events.at(-1)?.requestContext.authorizer).toBeUndefined();

    const calls = events.length;
    const owner = await fetch(`${server.url}/api/operations`);
    expect(owner.status).toBe(401);
    expect(events).toHaveLength(calls);
    const token = await signDevToken('alice', SECRET);
    expect((await fetch(`${server.url}/api/operations`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it('answers a body over its 1 MiB cap with the 413 problem every body-taking route documents', async () => {
    const token = await signDevToken('alice', SECRET);
    const compile = documentValidator(doc);
    for (const [method, path] of [['POST', '/api/jobs'], ['PATCH', '/api/me/settings'], ['POST', '/api/operations']] as const) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'too-large' },
        body: 'x'.repeat(LOCAL_MAX_BODY_BYTES + 1),
      });
      expect(response.status, `${method} ${path}`).toBe(413);
      const documented = doc.paths[path][method.toLowerCase()].responses['413'];
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      const check = compile(documented.content['application/problem+json'].schema);
      expect(check(await response.json()), `${method} ${path}`).toBe(true);
    }
  });
});

/** A JSON Schema 2020-12 validator over the document's components (OpenAPI 3.1 schemas are 2020-12 schemas). */
function documentValidator(document: any) {
  const base = 'https://durable-ops.test/openapi.json';
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: base, components: document.components });
  return (schema: unknown) => ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${base}#/components/`)));
}

describe.each(DIALECTS)('real responses on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  const compileDoc = documentValidator(doc);
  const compile = compileDoc;
  const compileOperator = documentValidator(operatorDoc);
  const covered = new Set<string>();
  let app: ApiTestApp;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect, { recoveryModules: testRecoveryModules() });
    app.deps.registry.register(strategySnapshotTask);
    await buildLedgerFixture(app.db);
  });
  afterAll(async () => app?.drop());

  /**
   * Calls the real handler and checks the answer against the document: its status is documented for the route, its
   * body validates against the schema documented for its status and content type, and every header the document
   * marks required is there.
   */
  async function call(template: string, input: ApiEventInput & { readonly scope?: string }): Promise<ParsedResponse> {
    const event = apiEvent(input);
    if (input.scope) event.requestContext.authorizer.jwt.claims.scope = input.scope;
    const response = parseResponse(await app.handler(event, lambdaContext()));
    const where = `${input.method} ${template} → ${response.status}`;
    const [document, compile] = input.scope === undefined ? [doc, compileDoc] : [operatorDoc, compileOperator];
    const documented = document.paths[template]?.[input.method.toLowerCase()]?.responses[String(response.status)];
    expect(documented, `${where} is documented (${response.text})`).toBeDefined();
    if (documented.content === undefined) {
      expect(response.text, `${where} has no content`).toBe('');
    } else {
      const schema = documented.content[response.headers['content-type'] ?? '']?.schema;
      expect(schema, `${where} documents ${response.headers['content-type']}`).toBeDefined();
      const check = compile(schema);
      expect(check(response.json), `${where}: ${JSON.stringify(check.errors)}`).toBe(true);
    }
    for (const [name, header] of Object.entries<any>(documented.headers ?? {})) {
      if (header.required) expect(response.headers[name.toLowerCase()], `${where} ${name}`).toBeDefined();
    }
    covered.add(`${input.method} ${template}`);
    return response;
  }

  it.skipIf(skip)('one real call per route (and its documented errors) answers exactly what the document says', async () => {
    const owner = `openapi-${dialect}`;
    const admit = { taskType: 'demo.wait', subject: { type: 'document', id: 'doc-1' }, params: { durationMs: 10 } };

    const job = await call('/api/jobs', { method: 'POST', path: '/api/jobs', owner, body: { title: 'SRE', company: 'Acme', description: 'Run queues.' } });
    expect(job.status).toBe(201);
    const jobId: string = job.json.id;
    expect((await call('/api/jobs/{jobId}', { method: 'GET', path: `/api/jobs/${jobId}`, owner })).status).toBe(200);
    expect((await call('/api/jobs', { method: 'POST', path: '/api/jobs', owner, body: { title: '' } })).status).toBe(400);
    expect((await call('/api/jobs', { method: 'POST', path: '/api/jobs', owner: null, body: {} })).status).toBe(401);

    const admitted = await call('/api/operations', { method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': 'oa-1' }, body: admit });
    expect(admitted.status).toBe(202);
    const id: string = admitted.json.id;
    const replay = await call('/api/operations', { method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': 'oa-1' }, body: admit });
    expect(replay.status).toBe(200);
    const reused = { ...admit, subject: { type: 'document', id: 'doc-2' } };
    expect((await call('/api/operations', { method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': 'oa-1' }, body: reused })).status).toBe(422);
    expect((await call('/api/operations', { method: 'POST', path: '/api/operations', owner, body: admit })).status).toBe(400);

    expect((await call('/api/operations', { method: 'GET', path: '/api/operations', owner })).json.items).toHaveLength(1);
    expect((await call('/api/operations', { method: 'GET', path: '/api/operations?limit=0', owner })).status).toBe(400);
    expect((await call('/api/operations/{id}', { method: 'GET', path: `/api/operations/${id}`, owner })).status).toBe(200);
    expect((await call('/api/operations/{id}', { method: 'GET', path: `/api/operations/${id}`, owner: 'someone-else' })).status).toBe(404);
    const read = await call('/api/operations/{id}', { method: 'GET', path: `/api/operations/${id}`, owner });
    const notModified = await call('/api/operations/{id}', { method: 'GET', path: `/api/operations/${id}`, owner, headers: { 'if-none-match': read.headers.etag! } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.etag).toBe(read.headers.etag);
    expect((await call('/api/operations/{id}/cancel', { method: 'POST', path: `/api/operations/${id}/cancel`, owner })).json.status).toBe('cancelled');
    expect((await call('/api/operations/{id}/retry', { method: 'POST', path: `/api/operations/${id}/retry`, owner })).status).toBe(202);
    expect((await call('/api/operations/{id}/retry', { method: 'POST', path: `/api/operations/${id}/retry`, owner })).status).toBe(409);
    expect((await call('/api/notifications', { method: 'GET', path: '/api/notifications', owner })).json.items.length).toBeGreaterThan(0);

    expect((await call('/api/me/settings', { method: 'GET', path: '/api/me/settings', owner })).status).toBe(200);
    expect((await call('/api/me/settings', { method: 'PATCH', path: '/api/me/settings', owner, body: { privacyMode: 'local_only' } })).status).toBe(200);
    expect((await call('/api/me/settings', { method: 'PATCH', path: '/api/me/settings', owner, body: { plan: 'pro' } })).status).toBe(400);
    const aiOff = `${owner}-ai-off`;
    await call('/api/me/settings', { method: 'PATCH', path: '/api/me/settings', owner: aiOff, body: { aiEnabled: false } });
    expect((await call('/api/operations', { method: 'POST', path: '/api/operations', owner: aiOff, headers: { 'idempotency-key': 'oa-2' }, body: admit })).status).toBe(403);

    const snapshotPath = `/api/jobs/${jobId}/strategy-snapshot`;
    const snapshotTemplate = '/api/jobs/{jobId}/strategy-snapshot';
    const requested = await call(snapshotTemplate, { method: 'POST', path: snapshotPath, owner, headers: { 'idempotency-key': 'snap-1' } });
    expect(requested.status).toBe(202);
    expect((await call(snapshotTemplate, { method: 'POST', path: snapshotPath, owner, headers: { 'idempotency-key': 'snap-2' } })).status).toBe(200);
    const missing = await call(snapshotTemplate, { method: 'GET', path: snapshotPath, owner });
    expect(missing.json).toMatchObject({ status: 404, code: 'snapshot_not_found', statusUrl: `/api/operations/${requested.json.id}` });
    const worker = new WorkerScope(app.db.store);
    const claim = await claimNextOperation(worker, { registry: new TaskRegistry().register(strategySnapshotTask), policy: app.deps.policy, capacity: app.deps.capacity });
    if (!claim) throw new Error('the strategy.snapshot operation was not claimed');
    const snapshot = { summary: 'Lead with reliability.', strengths: ['Queues'], risks: [], questionsToAsk: [], nextSteps: ['Tailor the CV'] };
    await completeOperation(enterOwnerScope(worker, claim), claim, {
      publish: async (tx) => {
        await upsertNote(tx, { ownerUserId: owner, jobId, noteKind: STRATEGY_SNAPSHOT_NOTE_KIND, contentJson: JSON.stringify(snapshot), operationId: claim.operationId });
      },
    });
    expect((await call(snapshotTemplate, { method: 'GET', path: snapshotPath, owner })).json.snapshot).toEqual(snapshot);

    expect((await call(OPENAPI_DOCUMENT_PATH, { method: 'GET', path: OPENAPI_DOCUMENT_PATH, owner: null })).status).toBe(200);

    expect([...covered].sort()).toEqual(DOCUMENTED_ROUTES.map(keyOf).sort());
  });

  it.skipIf(skip)('one real call per operator route answers exactly what the operator document says', async () => {
    const owner = `openapi-ops-${dialect}`;
    const read = OPS_READ_SCOPE;
    const write = OPS_WRITE_SCOPE;
    const admit = { taskType: 'demo.wait', subject: { type: 'document', id: 'doc-ops' }, params: { durationMs: 10 } };
    const admitted = await call('/api/operations', { method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': 'ops-1' }, body: admit });
    const id: string = admitted.json.id;
    const covering = new Set<string>();
    const op = async (template: string, input: ApiEventInput & { readonly scope: string }) => {
      covering.add(`${input.method} ${template}`);
      return call(template, input);
    };
    expect((await op('/api/ops/operations', { method: 'GET', path: '/api/ops/operations', owner: 'op', scope: read })).status).toBe(200);
    expect((await op('/api/ops/operations', { method: 'GET', path: '/api/ops/operations?limit=0', owner: 'op', scope: read })).status).toBe(400);
    expect((await op('/api/ops/operations', { method: 'GET', path: '/api/ops/operations', owner: 'op', scope: write })).status).toBe(404);
    expect((await op('/api/ops/operations/{id}', { method: 'GET', path: `/api/ops/operations/${id}`, owner: 'op', scope: read })).status).toBe(200);
    expect((await op('/api/ops/operations/{id}/cancel', { method: 'POST', path: `/api/ops/operations/${id}/cancel`, owner: 'op', scope: write })).status).toBe(200);
    expect((await op('/api/ops/operations/{id}/cancel', { method: 'POST', path: `/api/ops/operations/${id}/cancel`, owner: 'op', scope: write })).status).toBe(200);
    expect((await op('/api/ops/operations/{id}/retry', { method: 'POST', path: `/api/ops/operations/${id}/retry`, owner: 'op', scope: write })).status).toBe(202);
    expect((await op('/api/ops/operations/{id}/retry', { method: 'POST', path: `/api/ops/operations/${id}/retry`, owner: 'op', scope: write })).status).toBe(409);
    const detail = await op('/api/ops/operations/{id}', { method: 'GET', path: `/api/ops/operations/${id}`, owner: 'op', scope: read });
    expect(detail.json.timeline.map((event: { kind: string }) => event.kind)).toEqual(['admitted', 'cancelled', 'owner_retry']);
    expect(detail.json.notifications).toEqual([expect.objectContaining({ status: 'cancelled', failureCode: null })]);
    expect((await op('/api/ops/capacity', { method: 'GET', path: '/api/ops/capacity', owner: 'op', scope: read })).status).toBe(200);
    expect((await op('/api/ops/recovery', { method: 'GET', path: '/api/ops/recovery', owner: 'op', scope: read })).json.items.length).toBeGreaterThan(0);
    expect((await op('/api/ops/recovery', { method: 'GET', path: '/api/ops/recovery?limit=0', owner: 'op', scope: read })).status).toBe(400);
    const resolve = `/api/ops/recovery/00000000-0000-4000-8000-000000000000/resolve-unknown`;
    expect((await op('/api/ops/recovery/{id}/resolve-unknown', { method: 'POST', path: resolve, owner: 'op', scope: write, body: {} })).status).toBe(400);
    expect((await op('/api/ops/dlq/redrive', { method: 'POST', path: '/api/ops/dlq/redrive', owner: 'op', scope: write })).status).toBe(app.deps.deadLetters ? 200 : 409);
    expect((await op('/api/ops/sweeps', { method: 'GET', path: '/api/ops/sweeps', owner: 'op', scope: read })).status).toBe(200);
    expect((await op('/api/ops/throughput', { method: 'GET', path: '/api/ops/throughput?minutes=5', owner: 'op', scope: read })).json.buckets).toHaveLength(5);
    expect((await op('/api/ops/throughput', { method: 'GET', path: '/api/ops/throughput?minutes=0', owner: 'op', scope: read })).status).toBe(400);
    expect((await op(OPERATOR_OPENAPI_DOCUMENT_PATH, { method: 'GET', path: OPERATOR_OPENAPI_DOCUMENT_PATH, owner: 'op', scope: read })).status).toBe(200);
    expect([...covering].sort()).toEqual(OPERATOR_DOCUMENTED_ROUTES.map(keyOf).sort());
  });

  it.skipIf(skip)('every documented path under a method it lacks answers the documented 405: Problem, and Allow naming exactly its methods', async () => {
    const problem = compile({ $ref: '#/components/schemas/Problem' });
    for (const [document, scope] of [[doc, undefined], [operatorDoc, `${OPS_READ_SCOPE} ${OPS_WRITE_SCOPE}`]] as const) {
      for (const [template, item] of Object.entries<Record<string, any>>(document.paths)) {
        const methods = Object.keys(item).filter((method) => HTTP_METHODS.includes(method));
        const path = template.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
        const event = apiEvent({ method: 'DELETE', path, owner: 'openapi-405', claims: OPERATOR_CLAIMS });
        if (scope) event.requestContext.authorizer.jwt.claims.scope = scope;
        const response = parseResponse(await app.handler(event, lambdaContext()));
        expect(response.status, `DELETE ${template}`).toBe(405);
        expect(problem(response.json), `DELETE ${template}`).toBe(true);
        // Its documented methods, and HEAD beside a public GET (answered as GET without the body; not an operation of its own).
        const answered = API_ROUTES.filter((route) => route.path === template).flatMap((route) => methodsOf(route));
        expect(answered.filter((method) => method !== 'HEAD').sort(), template).toEqual(methods.map((method) => method.toUpperCase()).sort());
        expect(response.headers.allow?.split(', ').sort(), `DELETE ${template}`).toEqual([...answered].sort());
        for (const method of methods) expect(item[method].responses['405'], `${method} ${template}`).toBeDefined();
      }
    }
  });
});
