import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { IdempotencyKeySchema } from '../operations/admission/admission-schema.js';
import type { ApiResult, ApiRoute } from './route-types.js';
import { PROBLEM_CONTENT_TYPE, ProblemSchema } from './problem-details.js';
import { ROUTE_TAGS, type ProblemStatus, type RouteDoc, type SuccessDoc, type SuccessHeader } from './route-doc.js';

/** An OpenAPI 3.1 document as `@asteasolutions/zod-to-openapi` builds it (the `OpenAPIObject` of `openapi3-ts/oas31`). */
export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

/** The name of the bearer JWT security scheme in `components.securitySchemes`. */
export const BEARER_SCHEME = 'bearerAuth';

/** Which document to build: the owner API (public, `GET /api/openapi.json`) or the operator surface (`ops:read` only). */
export type DocumentAudience = 'owner' | 'operator';

/**
 * What API Gateway's JWT authorizer itself answers with a 401 (a missing, invalid or expired token) before the Lambda
 * runs: `{"message":"Unauthorized"}`, not problem+json. It is not a response body of the document — every 401 there is
 * problem+json, so a generated client reads one shape — but the `x-api-gateway-body` extension of each 401 carries it.
 */
const GatewayUnauthorizedSchema = z.strictObject({ message: z.literal('Unauthorized') });

/** {@link GatewayUnauthorizedSchema} as the JSON Schema the `x-api-gateway-body` extension holds. */
const GATEWAY_UNAUTHORIZED_JSON_SCHEMA = (() => {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(GatewayUnauthorizedSchema, { target: 'draft-2020-12' });
  return schema;
})();

/** The `Idempotency-Key` request header (docs/design.md §7; IETF `Idempotency-Key` header draft), required where declared. */
const IDEMPOTENCY_KEY_HEADER = {
  'Idempotency-Key': IdempotencyKeySchema.meta({
    description: '1–128 characters of `[A-Za-z0-9._:-]`, chosen by the client; the same request under the same key is replayed, not repeated.',
  }),
};

/** A strong entity tag (RFC 9110 §8.8.3): an opaque string in double quotes, never `W/`-prefixed. */
const EtagSchema = z
  .string()
  .regex(/^"[^"]*"$/)
  .meta({ description: 'A strong entity tag of the resource’s current version (RFC 9110 §8.8.3): opaque, in double quotes. Send it back as `If-None-Match`.' });

/** The `If-None-Match` request header of a conditional GET (RFC 9110 §13.1.2). */
const IF_NONE_MATCH_HEADER = {
  'If-None-Match': z.string().optional().meta({
    description: 'The `ETag` of the copy the client holds (RFC 9110 §13.1.2). While it still matches, the answer is `304 Not Modified` with no body.',
  }),
};

/** Every success header, documented once (RFC 9110 §10.2.2 `Location`, §8.8.3 `ETag`; IETF `Idempotency-Key` draft). */
const SUCCESS_HEADERS: Record<SuccessHeader, { readonly name: string; readonly schema: z.ZodType }> = {
  location: { name: 'Location', schema: z.string().meta({ description: 'The URL path of the operation (its `statusUrl`) or of the created job.' }) },
  'idempotent-replayed': {
    name: 'Idempotent-Replayed',
    schema: z.literal('true').meta({ description: '`true` when this answer replays an earlier request under the same key.' }),
  },
  etag: { name: 'ETag', schema: EtagSchema },
};

const problemContent = { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } };

/** The 401 of every authenticated route: problem+json only; API Gateway's own body is described beside it (see above). */
const UNAUTHORIZED: ResponseConfig & { readonly 'x-api-gateway-body': unknown } = {
  description:
    'No verified bearer token: RFC 9457 problem+json (`code: unauthorized`) with `WWW-Authenticate: Bearer`. In AWS, API Gateway’s ' +
    'JWT authorizer refuses a missing, invalid or expired token before the API runs, with its own `application/json` body ' +
    '`{"message":"Unauthorized"}` (described by the `x-api-gateway-body` extension): a client should treat any 401 as “get a new token”.',
  headers: z.object({ 'WWW-Authenticate': z.string().optional().meta({ description: 'The `Bearer` challenge (RFC 6750 §3); the API always sends it.' }) }),
  content: problemContent,
  'x-api-gateway-body': { contentType: 'application/json', schema: GATEWAY_UNAUTHORIZED_JSON_SCHEMA },
};

/**
 * The 405 of every route (`lib/http/api-handler.ts`): its path under a method it does not have. RFC 9110 §15.5.6
 * requires the `Allow` header.
 */
const METHOD_NOT_ALLOWED: ResponseConfig = {
  description:
    'This path under another method (`code: method_not_allowed`): `Allow` lists the methods this path has, those documented here ' +
    '(RFC 9110 §15.5.6). The API and the local server answer it; behind API Gateway, which deploys only the documented routes, ' +
    'another method gets API Gateway’s own 404 instead.',
  headers: z.object({ Allow: z.string().meta({ description: 'The methods of this path, comma-separated, e.g. `GET, POST`.' }) }),
  content: problemContent,
};

/**
 * The 413 of every route that takes a body: the local server (`lib/local/local-http-server.ts`) refuses a body over
 * `LOCAL_MAX_BODY_BYTES` (1 MiB) before the API reads it (RFC 9110 §15.5.14).
 */
const CONTENT_TOO_LARGE: ResponseConfig = {
  description:
    'The request body is over 1 MiB (`code: content_too_large`): the local server refuses it before the API reads it, and closes ' +
    'the connection (RFC 9110 §15.5.14). In AWS, API Gateway refuses a payload over its own 10 MB quota itself. A body over the ' +
    'route’s own limit but under 1 MiB is a 400.',
  content: problemContent,
};

/**
 * The 415 of every route that takes a body (`checkRequestBody`, `lib/http/json-body.ts`): a body not declared as JSON
 * (RFC 9110 §15.5.16).
 */
const UNSUPPORTED_MEDIA_TYPE: ResponseConfig = {
  description:
    'The body is not declared as JSON (`code: unsupported_media_type`): send `Content-Type: application/json` (or an ' +
    '`application/…+json` type; a `charset` only `utf-8`). A body without any `Content-Type` is refused too — curl’s `-d` ' +
    'sends `application/x-www-form-urlencoded` unless told otherwise. The body is not parsed.',
  content: problemContent,
};

/** What the 400 of every route that takes no body says about one (`checkRequestBody`). */
const BODY_NOT_TAKEN = 'A request body was sent: this route takes none (`errors[0].path` is `body`).';

/** The 304 of a conditional GET (RFC 9110 §15.4.5): no content, the same strong `ETag`. */
const NOT_MODIFIED: ResponseConfig = {
  description: 'Not Modified: `If-None-Match` matches the current `ETag`, so the copy the client holds is current. No content (RFC 9110 §15.4.5).',
  headers: z.object({ ETag: EtagSchema }),
};

/** The 500 of every route: a generic problem that never names an internal detail. */
const INTERNAL_ERROR: ResponseConfig = {
  description: 'An unexpected server error (`code: internal_error`, `type: about:blank`); the body names no internal detail.',
  content: problemContent,
};

/**
 * The 503 of every route that reads or writes the database (all but the `meta` documents, generated in process): the database is down,
 * restarting, out of connections, or the connection was cut (`DatabaseUnavailableError`). `Retry-After` is
 * `DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS`.
 */
const SERVICE_UNAVAILABLE: ResponseConfig = {
  description:
    'The database is unavailable for now (`code: database_unavailable`): a restart, a failover, too many connections, or a cut ' +
    'connection. Safe to retry after `Retry-After` seconds; a request with an `Idempotency-Key` is retried with the same key — ' +
    'nothing was written, or, if the connection was lost after the commit, the retry gets the replay.',
  headers: z.object({
    'Retry-After': z.number().int().min(1).meta({ description: 'Seconds to wait before trying again (RFC 9110 §10.2.3).' }),
  }),
  content: problemContent,
};

function successResponse(success: SuccessDoc): ResponseConfig {
  const headers = Object.entries(success.headers ?? {}).map(([key, always]) => {
    const { name, schema } = SUCCESS_HEADERS[key as SuccessHeader];
    return [name, always ? schema : schema.optional()] as const;
  });
  return {
    description: success.description,
    ...(headers.length > 0 ? { headers: z.object(Object.fromEntries(headers)) } : {}),
    content: { 'application/json': { schema: success.schema } },
  };
}

function problemResponse(status: ProblemStatus, description: string): ResponseConfig {
  if (status !== 429) return { description, content: problemContent };
  const retryAfter = z.number().int().min(0).meta({ description: 'Seconds to wait before trying again (RFC 9110 §10.2.3).' });
  return { description, headers: z.object({ 'Retry-After': retryAfter }), content: problemContent };
}

/** The `{name}` parameters of a path template, in order. */
function templateParams(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] ?? '');
}

/**
 * The registry entry of one route.
 * @throws {Error} when the route's documented path parameters differ from its path template, or it documents no success.
 */
function routeConfig(route: ApiRoute): RouteConfig {
  const doc: RouteDoc = route.doc;
  const where = `${route.method} ${route.path}`;
  const declared = Object.keys(doc.pathParams?.shape ?? {}).sort().join(', ');
  if (declared !== templateParams(route.path).sort().join(', ')) throw new Error(`${where}: its doc declares path parameters [${declared}]`);
  const successes = Object.entries(doc.success).map(([status, success]) => [status, successResponse(success)] as const);
  if (successes.length === 0) throw new Error(`${where}: its doc declares no success response`);
  // A route without a body answers one with 400, so its 400 says so (or is that alone).
  const documented: RouteDoc['problems'] = doc.body ? doc.problems : { ...doc.problems, 400: doc.problems[400] ? `${doc.problems[400]} ${BODY_NOT_TAKEN}` : BODY_NOT_TAKEN };
  const problems = Object.entries(documented).map(([status, text]) => [status, problemResponse(Number(status) as ProblemStatus, text)] as const);
  const headers = { ...(doc.idempotencyKey ? IDEMPOTENCY_KEY_HEADER : {}), ...(doc.conditional ? IF_NONE_MATCH_HEADER : {}) };
  return {
    method: route.method.toLowerCase() as RouteConfig['method'],
    path: route.path,
    operationId: doc.operationId,
    tags: [doc.tag],
    summary: doc.summary,
    description: doc.description,
    security: route.access === 'public' ? [] : [{ [BEARER_SCHEME]: route.access === 'operator' ? [route.scope] : [] }],
    request: {
      ...(doc.pathParams ? { params: doc.pathParams } : {}),
      ...(doc.query ? { query: doc.query } : {}),
      ...(Object.keys(headers).length > 0 ? { headers: z.object(headers) } : {}),
      ...(doc.body ? { body: { description: doc.body.description, required: true, content: { 'application/json': { schema: doc.body.schema } } } } : {}),
    },
    responses: Object.fromEntries([
      ...successes,
      ...(doc.conditional ? [['304', NOT_MODIFIED] as const] : []),
      ...problems,
      ...(route.access === 'public' ? [] : [['401', UNAUTHORIZED] as const]),
      ['405', METHOD_NOT_ALLOWED],
      ...(doc.body ? [['413', CONTENT_TOO_LARGE] as const, ['415', UNSUPPORTED_MEDIA_TYPE] as const] : []),
      ['500', INTERNAL_ERROR],
      ...(doc.tag === 'meta' ? [] : [['503', SERVICE_UNAVAILABLE] as const]),
    ]),
  };
}

/**
 * The `servers` of both documents: the origin that serves them. Relative, so it is right for every stage (API Gateway's
 * `$default` stage, no path prefix) and for the local server alike.
 */
const SERVERS = [
  {
    url: '/',
    description: 'The origin this document was fetched from: the API Gateway HTTP API of a stage in AWS, or the local server (`npm start`, http://127.0.0.1:3000).',
  },
];

/** Who answers for the API. package.json names no author, repository or license, so the contact is the project alone. */
const CONTACT = { name: 'durable-ops maintainers' };

/** The `info` of each document, beyond the title-independent version. */
const INFO: Record<DocumentAudience, { readonly title: string; readonly description: string }> = {
  owner: {
    title: 'durable-ops API',
    description:
      `${pkg.description}. Every route but this document needs \`Authorization: Bearer <JWT>\`; the owner is the \`sub\` claim. ` +
      'Errors are RFC 9457 `application/problem+json`. Another owner’s resource is a 404, never a 403. The local server refuses ' +
      'any request body over 1 MiB with 413.',
  },
  operator: {
    title: 'durable-ops operator API',
    description:
      `${pkg.description}: the operator surface (docs/design.md §8). Every route needs \`Authorization: Bearer <JWT>\` whose ` +
      'token passes the configured operator rule (an operator issuer/audience, group or subject list; README "Operator identity") ' +
      'and whose space-separated `scope` claim holds `ops:read` (GET) or `ops:write` (POST); to any other caller each route, and this document, is a 404, ' +
      'never a 401/403 that would confirm it. Errors are RFC 9457 `application/problem+json`. The local server refuses any ' +
      'request body over 1 MiB with 413.',
  },
};

/** Whether `route` belongs to the document for `audience`. */
const belongsTo = (route: ApiRoute, audience: DocumentAudience) => (audience === 'operator') === (route.access === 'operator');

/**
 * Builds the OpenAPI 3.1 document of `routes` (normally `API_ROUTES`) for `audience` with `@asteasolutions/zod-to-openapi`:
 * one operation per route, from its {@link RouteDoc} — path and query parameters, the `Idempotency-Key` and
 * `If-None-Match` headers, the JSON body, every success response with its DTO schema and headers (and a `304` for a
 * conditional GET), and an RFC 9457 `application/problem+json` response ({@link ProblemSchema}) for each documented
 * error status, plus 401 on every authenticated route, 405 on every route, 413 and 415 on every route that takes a body,
 * a 400 (or a sentence added to the route's own) for a body sent to a route that takes none, and 500 on every route. Owner routes require the {@link BEARER_SCHEME} JWT scheme, operator routes the same scheme with
 * their scope, public routes nothing (`security: []`).
 *
 * The `owner` document lists every owner and public route and never an operator route: those answer 404 to everyone
 * without their scope, never confirming they exist (docs/design.md §8), so a public document must not list them either.
 * The `operator` document lists the operator routes only. Named zod schemas (`.meta({ id })`) become
 * `components.schemas`. `info.version` is the package version; `servers` is the serving origin.
 * @default audience `'owner'`
 * @throws {Error} when a route's documented path parameters differ from its path template, it documents no success
 * response, or two routes share an `operationId` (OpenAPI 3.1's Operation Object requires them unique).
 */
export function buildOpenApiDocument(routes: readonly ApiRoute[], audience: DocumentAudience = 'owner'): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', BEARER_SCHEME, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      audience === 'owner'
        ? 'A JWT whose `sub` claim is the owner. The API Gateway JWT authorizer verifies it.'
        : 'A JWT that passes the operator rule and whose `scope` claim holds the route’s scope (`ops:read` or `ops:write`). The API Gateway operator JWT authorizer verifies it.',
  });
  const operationIds = new Set<string>();
  const documented = routes.filter((route) => belongsTo(route, audience));
  for (const route of documented) {
    if (operationIds.has(route.doc.operationId)) throw new Error(`operationId ${route.doc.operationId} is used twice`);
    operationIds.add(route.doc.operationId);
    registry.registerPath(routeConfig(route));
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { ...INFO[audience], version: pkg.version, contact: CONTACT },
    servers: SERVERS,
    tags: [...new Set(documented.map((route) => route.doc.tag))].map((name) => ({ name, description: ROUTE_TAGS[name] })),
  });
}

/** The JSON text of each document per route table: built on first use, then reused for the life of the process. */
const built: Record<DocumentAudience, WeakMap<readonly ApiRoute[], string>> = { owner: new WeakMap(), operator: new WeakMap() };

/**
 * The OpenAPI document of `routes` for `audience` as JSON text, built once per process, route table and audience (see
 * {@link buildOpenApiDocument}).
 * @default audience `'owner'`
 * @throws {Error} as {@link buildOpenApiDocument}.
 */
export function openApiJson(routes: readonly ApiRoute[], audience: DocumentAudience = 'owner'): string {
  let json = built[audience].get(routes);
  if (json === undefined) {
    json = JSON.stringify(buildOpenApiDocument(routes, audience));
    built[audience].set(routes, json);
  }
  return json;
}

/**
 * The answer of `GET /api/openapi.json` (`owner`) or `GET /api/ops/openapi.json` (`operator`): 200,
 * `content-type: application/json`, the cached {@link openApiJson}. The owner document holds no owner data, so
 * `cache-control: public, max-age=300` lets shared caches keep it five minutes; the operator document is shown to
 * operators only, so it is `private, max-age=300` (RFC 9111 §5.2.2.7: no shared cache stores it).
 * @default audience `'owner'`
 * @throws {Error} as {@link buildOpenApiDocument} (answered as a generic 500).
 */
export function openApiResponse(routes: readonly ApiRoute[], audience: DocumentAudience = 'owner'): ApiResult {
  const cacheControl = audience === 'owner' ? 'public, max-age=300' : 'private, max-age=300';
  return { statusCode: 200, headers: { 'content-type': 'application/json', 'cache-control': cacheControl }, body: openApiJson(routes, audience) };
}
