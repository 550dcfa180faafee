import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { IdempotencyKeySchema } from '../operations/admission/admission-schema.js';
import type { ApiResult, ApiRoute } from './route-types.js';
import { PROBLEM_CONTENT_TYPE, ProblemSchema } from './problem-details.js';
import type { ProblemStatus, RouteDoc, SuccessDoc, SuccessHeader } from './route-doc.js';

/** An OpenAPI 3.1 document as `@asteasolutions/zod-to-openapi` builds it (the `OpenAPIObject` of `openapi3-ts/oas31`). */
export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

/** The name of the bearer JWT security scheme in `components.securitySchemes`. */
export const BEARER_SCHEME = 'bearerAuth';

/**
 * What API Gateway's JWT authorizer itself answers with a 401 (a missing, invalid or expired token) before the Lambda
 * runs: `{"message":"Unauthorized"}`, not problem+json.
 */
const GatewayUnauthorizedSchema = z
  .strictObject({ message: z.string() })
  .meta({ id: 'GatewayUnauthorized', description: 'API Gateway’s own 401 body, sent before the API runs.' });

/** The `Idempotency-Key` request header (docs/design.md §7; IETF `Idempotency-Key` header draft), required where declared. */
const IdempotencyKeyHeaderSchema = z.object({
  'Idempotency-Key': IdempotencyKeySchema.meta({
    description: '1–128 characters of `[A-Za-z0-9._:-]`, chosen by the client; the same request under the same key is replayed, not repeated.',
  }),
});

/** Every success header, documented once (RFC 9110 §10.2.2 `Location`; IETF `Idempotency-Key` draft). */
const SUCCESS_HEADERS: Record<SuccessHeader, { readonly name: string; readonly schema: z.ZodType }> = {
  location: { name: 'Location', schema: z.string().meta({ description: 'The URL path of the operation (its `statusUrl`) or of the created job.' }) },
  'idempotent-replayed': {
    name: 'Idempotent-Replayed',
    schema: z.literal('true').meta({ description: '`true` when this answer replays an earlier request under the same key.' }),
  },
};

const problemContent = { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } };

/** The 401 of every authenticated route: the Lambda's problem+json, or API Gateway's own body (see above). */
const UNAUTHORIZED: ResponseConfig = {
  description:
    'No verified bearer token. The API answers RFC 9457 problem+json (`code: unauthorized`); in AWS, API Gateway’s JWT authorizer ' +
    'refuses a missing, invalid or expired token itself, with `{"message":"Unauthorized"}`.',
  headers: z.object({ 'WWW-Authenticate': z.string().optional().meta({ description: 'The `Bearer` challenge (RFC 6750 §3); the API always sends it.' }) }),
  content: { ...problemContent, 'application/json': { schema: GatewayUnauthorizedSchema } },
};

/** The 500 of every route: a generic problem that never names an internal detail. */
const INTERNAL_ERROR: ResponseConfig = {
  description: 'An unexpected server error (`code: internal_error`, `type: about:blank`); the body names no internal detail.',
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
  const problems = Object.entries(doc.problems).map(([status, text]) => [status, problemResponse(Number(status) as ProblemStatus, text)] as const);
  return {
    method: route.method.toLowerCase() as RouteConfig['method'],
    path: route.path,
    operationId: doc.operationId,
    tags: [doc.tag],
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    security: route.access === 'public' ? [] : [{ [BEARER_SCHEME]: route.access === 'operator' ? [route.scope] : [] }],
    request: {
      ...(doc.pathParams ? { params: doc.pathParams } : {}),
      ...(doc.query ? { query: doc.query } : {}),
      ...(doc.idempotencyKey ? { headers: IdempotencyKeyHeaderSchema } : {}),
      ...(doc.body ? { body: { description: doc.body.description, required: true, content: { 'application/json': { schema: doc.body.schema } } } } : {}),
    },
    responses: Object.fromEntries([
      ...successes,
      ...problems,
      ...(route.access === 'public' ? [] : [['401', UNAUTHORIZED] as const]),
      ['500', INTERNAL_ERROR],
    ]),
  };
}

/**
 * Builds the OpenAPI 3.1 document of `routes` (normally `API_ROUTES`) with `@asteasolutions/zod-to-openapi`: one
 * operation per route, from its {@link RouteDoc} — path and query parameters, the `Idempotency-Key` header, the JSON
 * body, every success response with its DTO schema and headers, and an RFC 9457 `application/problem+json` response
 * ({@link ProblemSchema}) for each documented error status, plus 401 on every authenticated route and 500 on every
 * route. Owner routes require the {@link BEARER_SCHEME} JWT scheme, public routes nothing (`security: []`). Operator
 * routes are left out: they answer 404 to everyone without their scope, never confirming they exist (docs/design.md §8), and a
 * public document must not list them either. Named zod
 * schemas (`.meta({ id })`) become `components.schemas`. `info.version` is the package version.
 * @throws {Error} when a route's documented path parameters differ from its path template, it documents no success
 * response, or two routes share an `operationId` (OpenAPI 3.1's Operation Object requires them unique).
 */
export function buildOpenApiDocument(routes: readonly ApiRoute[]): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', BEARER_SCHEME, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'A JWT whose `sub` claim is the owner. The API Gateway JWT authorizer verifies it.',
  });
  const operationIds = new Set<string>();
  const documented = routes.filter((route) => route.access !== 'operator');
  for (const route of documented) {
    if (operationIds.has(route.doc.operationId)) throw new Error(`operationId ${route.doc.operationId} is used twice`);
    operationIds.add(route.doc.operationId);
    registry.registerPath(routeConfig(route));
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'durable-ops API',
      version: pkg.version,
      description:
        `${pkg.description}. Every route but this document needs \`Authorization: Bearer <JWT>\`; the owner is the \`sub\` claim. ` +
        'Errors are RFC 9457 `application/problem+json`. Another owner’s resource is a 404, never a 403.',
    },
    tags: [...new Set(documented.map((route) => route.doc.tag))].map((name) => ({ name })),
  });
}

/** The JSON text of the document per route table: built on first use, then reused for the life of the process. */
const built = new WeakMap<readonly ApiRoute[], string>();

/**
 * The OpenAPI document of `routes` as JSON text, built once per process and route table (see
 * {@link buildOpenApiDocument}).
 * @throws {Error} as {@link buildOpenApiDocument}.
 */
export function openApiJson(routes: readonly ApiRoute[]): string {
  let json = built.get(routes);
  if (json === undefined) {
    json = JSON.stringify(buildOpenApiDocument(routes));
    built.set(routes, json);
  }
  return json;
}

/**
 * The answer of `GET /api/openapi.json`: 200, `content-type: application/json`, the cached {@link openApiJson}, and
 * `cache-control: public, max-age=300` — the document holds no owner data, so shared caches may keep it five minutes.
 * @throws {Error} as {@link buildOpenApiDocument} (answered as a generic 500).
 */
export function openApiResponse(routes: readonly ApiRoute[]): ApiResult {
  return { statusCode: 200, headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' }, body: openApiJson(routes) };
}
