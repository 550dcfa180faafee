import { z } from 'zod';
import { JOB_ROUTES } from './job-routes.js';
import { openApiResponse } from './openapi.js';
import { OPERATION_ROUTES } from './operation-routes.js';
import { OPS_READ_SCOPE } from './auth.js';
import { OPERATOR_ROUTES } from './operator-routes.js';
import type { ApiRoute } from './route-types.js';
import { SETTINGS_ROUTES } from './settings-routes.js';

/** The path of the public OpenAPI 3.1 document of the API. */
export const OPENAPI_DOCUMENT_PATH = '/api/openapi.json';

/** The path of the OpenAPI 3.1 document of the operator surface, shown to `ops:read` callers only. */
export const OPERATOR_OPENAPI_DOCUMENT_PATH = '/api/ops/openapi.json';

/**
 * The body of `GET /api/openapi.json`: an OpenAPI 3.1 document. Only its required top-level members are spelled out;
 * the OpenAPI 3.1 specification defines the rest.
 */
export const OpenApiDocumentSchema = z
  .looseObject({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0).' });

/**
 * The API: the owner API, exactly as docs/design.md §7 lists it, the operator surface and the public OpenAPI document. Every
 * route carries its OpenAPI description beside its handler; every body passes its DTO schema on the way out; errors
 * are thrown and answered by the problem-details middleware.
 *
 * - `/api/operations…` and `/api/notifications` — the owner's operations, `OPERATION_ROUTES`
 *   (`lib/http/operation-routes.ts`).
 * - `/api/me/settings` — the owner's settings, `SETTINGS_ROUTES` (`lib/http/settings-routes.ts`).
 * - `/api/jobs…` — the owner's jobs and their strategy snapshots, `JOB_ROUTES` (`lib/http/job-routes.ts`).
 * - `/api/ops/…` — the operator surface, `OPERATOR_ROUTES` (`lib/http/operator-routes.ts`): GET routes need the JWT
 *   scope `ops:read`, POST routes `ops:write`; anyone else gets 404, as for a path that does not exist.
 * - `GET /api/openapi.json` — public, no token: 200 the OpenAPI 3.1 document of the owner and public routes
 *   (`lib/http/openapi.ts`), built once per process.
 * - `GET /api/ops/openapi.json` — `ops:read` only (404 to anyone else, like every operator route): 200 the OpenAPI 3.1
 *   document of the operator routes, built once per process.
 */
export const API_ROUTES: readonly ApiRoute[] = [
  ...OPERATION_ROUTES,
  ...SETTINGS_ROUTES,
  ...JOB_ROUTES,
  ...OPERATOR_ROUTES,
  {
    access: 'public',
    method: 'GET',
    path: OPENAPI_DOCUMENT_PATH,
    doc: {
      operationId: 'getOpenApiDocument',
      tag: 'meta',
      summary: 'This OpenAPI 3.1 document',
      description: 'Public: no token needed. Generated from the routes’ zod schemas, once per process.',
      success: { 200: { description: 'The OpenAPI 3.1 document of this API.', schema: OpenApiDocumentSchema } },
      problems: {},
    },
    async handle() {
      return openApiResponse(API_ROUTES);
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: OPERATOR_OPENAPI_DOCUMENT_PATH,
    doc: {
      operationId: 'getOperatorOpenApiDocument',
      tag: 'meta',
      summary: 'This OpenAPI 3.1 document of the operator API (operators only)',
      description:
        'Needs the JWT scope `ops:read`; to every other caller it does not exist (a 404, like every operator route). Generated from the ' +
        'operator routes’ zod schemas, once per process; the console’s API types are generated from it.',
      success: { 200: { description: 'The OpenAPI 3.1 document of the operator API.', schema: OpenApiDocumentSchema } },
      problems: { 404: 'The caller’s token lacks the `ops:read` scope.' },
    },
    async handle() {
      return openApiResponse(API_ROUTES, 'operator');
    },
  },
];

/**
 * The HTTP methods `route` answers: its own, and for a public `GET` also `HEAD` — the same status and headers without
 * the body (RFC 9110 §9.3.2), so `curl -I` and link checkers work without a token. API Gateway HTTP API matches a
 * `GET` route for GET requests only, so `serverless.yml` deploys each such `HEAD` route beside its `GET`.
 */
export function methodsOf(route: ApiRoute): readonly (ApiRoute['method'] | 'HEAD')[] {
  return route.access === 'public' && route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
}
