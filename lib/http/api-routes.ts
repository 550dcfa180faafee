import type { Runtime } from '../runtime.js';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { JobDtoSchema, jobUrlOf, toJobDto } from '../jobs/job-dto.js';
import { createJob, getJob } from '../jobs/jobs.js';
import { admitOperation, type Admission } from '../operations/admission/admit-operation.js';
import { OperationDtoSchema, toNotificationDto, toOperationDto } from '../operations/owner/operation-dto.js';
import { cancelOperation, retryOperation } from '../operations/owner/owner-commands.js';
import { getOperation, listNotifications, listOperations } from '../operations/owner/owner-reads.js';
import type { OwnerScope } from '../operations/scopes.js';
import { getOwnSettings, OwnerSettingsDtoSchema, updateOwnSettings } from '../owners/owner-settings.js';
import { OPERATOR_ROUTES } from './operator-routes.js';
import { MAX_JOB_BODY_BYTES, parseJsonObjectBody } from './json-body.js';
import { readStrategySnapshot, requestStrategySnapshot } from '../features/strategy-snapshot/strategy-snapshot.js';
import { StrategySnapshotDtoSchema, toStrategySnapshotDto } from '../features/strategy-snapshot/strategy-snapshot-dto.js';
import { jsonResponse } from './json-response.js';
import { ROUTE_DOCS } from './api-route-docs.js';
import { openApiResponse } from './openapi.js';
import type { RouteDoc } from './route-doc.js';
import { NotificationPageDtoSchema, OperationPageDtoSchema } from './page-dto.js';

/** An API Gateway HTTP API (payload 2.0) event that passed a JWT authorizer. */
export type ApiEvent = APIGatewayProxyEventV2WithJWTAuthorizer;

/** What every API response is: status, headers and a JSON (or problem+json) body. */
export type ApiResult = APIGatewayProxyStructuredResultV2;

/**
 * What the API needs: the database, the task types it admits, the operation policy, the capacity policy
 * (admission limits, DESIGN §4), the wake-up queue, the dead-letter queue when one is configured (the operator's
 * redrive), the modules of the recovery ledger (their reconciliation actions, DESIGN §8), a logger and the metrics the
 * services count into. A `Runtime` is one.
 */
export type ApiDeps = Pick<Runtime, 'store' | 'registry' | 'policy' | 'capacity' | 'wakeups' | 'deadLetters' | 'recoveryModules' | 'logger' | 'metrics'>;

/**
 * The answer to an admission (DESIGN §7): 202 + `Location` for a new operation; 200 + `Idempotent-Replayed: true` for a
 * replayed key; 200 + `Location` for the active operation of an exclusive subject, reused.
 */
function admissionResponse({ operation, replayed, reused }: Admission): ApiResult {
  const dto = toOperationDto(operation);
  if (replayed) return jsonResponse(200, OperationDtoSchema, dto, { 'idempotent-replayed': 'true' });
  return jsonResponse(reused ? 200 : 202, OperationDtoSchema, dto, { location: dto.statusUrl });
}

/**
 * What every route has: a method, a path template (`{name}` is a path parameter) and its OpenAPI metadata, from which
 * `lib/http/openapi.ts` builds the document — required, so no route exists without its contract.
 */
interface RouteBase {
  readonly method: 'GET' | 'POST' | 'PATCH';
  readonly path: string;
  readonly doc: RouteDoc;
}

/** A route of the owner API (DESIGN §7): it acts for the authenticated owner, the JWT `sub`. */
export interface OwnerRoute extends RouteBase {
  readonly access: 'owner';
  /** One `lib/` service call for the authenticated owner, then DTO mapping (STYLE §8). */
  handle(scope: OwnerScope, deps: ApiDeps, event: ApiEvent): Promise<ApiResult>;
}

/**
 * A route of the operator surface (DESIGN §8): not owner-scoped, and invisible — a 404, for every method — to any
 * caller whose verified scopes lack `scope` (checked by the API handler before routing and again before `handle`).
 */
export interface OperatorRoute extends RouteBase {
  readonly access: 'operator';
  /** The OAuth scope a caller needs, e.g. `ops:read`. */
  readonly scope: string;
  /** One `lib/` service call, then DTO mapping (STYLE §8). */
  handle(deps: ApiDeps, event: ApiEvent): Promise<ApiResult>;
}

/**
 * A route anyone may call, without a token (the OpenAPI document): API Gateway deploys it without the JWT authorizer,
 * the local server lets it through unverified, and the API handler neither requires nor reads claims for it.
 */
export interface PublicRoute extends RouteBase {
  readonly access: 'public';
  /** Answers from what the process already holds: no dependencies, no owner. */
  handle(event: ApiEvent): Promise<ApiResult>;
}

/** One route of the API. */
export type ApiRoute = OwnerRoute | OperatorRoute | PublicRoute;

/** The path of the public OpenAPI 3.1 document of the API. */
export const OPENAPI_DOCUMENT_PATH = '/api/openapi.json';

/**
 * The API: the owner API, exactly as DESIGN §7 lists it, the operator surface and the public OpenAPI document. Every
 * body passes its DTO schema on the way out; errors are thrown and answered by the problem-details middleware.
 *
 * - `POST /api/operations` — header `Idempotency-Key` (1–128 of `[A-Za-z0-9._:-]`), body
 *   `{taskType, subject: {type, id}, params?}`. New: **202** + `Location: /api/operations/{id}`. Replay of the same
 *   request under the same key: **200** + `Idempotent-Replayed: true` (IETF `Idempotency-Key` header draft), even
 *   when capacity is full. Not entitled: 403; a capacity limit full: 429 + `Retry-After` (DESIGN §4).
 * - `GET /api/operations?status=&taskType=&limit=&cursor=` — 200 `{items, nextCursor}`, newest first.
 * - `GET /api/operations/{id}` — 200 the operation.
 * - `POST /api/operations/{id}/cancel` — 200 the operation (`cancelled`, or `running` with `cancelRequested`).
 * - `POST /api/operations/{id}/retry` — 202 the operation (`queued` again); 403 / 429 as admission.
 * - `GET /api/notifications?limit=&cursor=` — 200 `{items, nextCursor}`, the owner's terminal notifications.
 * - `GET /api/me/settings` — 200 `{plan, aiEnabled, privacyMode}` (defaults for an owner who never changed them).
 * - `PATCH /api/me/settings` — body `{aiEnabled?, privacyMode?}`, at least one; 200 the new settings. The plan is an
 *   entitlement only an operator changes (`npm run owner`), so a body naming it is a 400 like any other unknown key.
 * - `POST /api/jobs` — body `{title, company, description}` (title and company trimmed, then 1–200 characters;
 *   description 1–20,000 characters, stored as sent; no other key): **201** + `Location: /api/jobs/{id}` + the job.
 *   Each POST creates a job (no idempotency key). Its body may be up to `MAX_JOB_BODY_BYTES` (256 KiB).
 * - `GET /api/jobs/{jobId}` — 200 the job; another owner's job, a missing one and a malformed id are the same 404.
 * - `POST /api/jobs/{jobId}/strategy-snapshot` — header `Idempotency-Key`, no body: **202** + `Location` and the new
 *   `strategy.snapshot` operation; **200** with the same operation for a replayed key (`Idempotent-Replayed: true`) or
 *   while one is already active for the job (DESIGN §7 feature producer). 404 job, 403 / 429 as admission.
 * - `GET /api/jobs/{jobId}/strategy-snapshot` — cache only, never starts model work: 200 the published snapshot, or 404
 *   `snapshot_not_found` whose `statusUrl` names the active operation producing it, when there is one.
 * - `/api/ops/…` — the operator surface, `OPERATOR_ROUTES` (`lib/http/operator-routes.ts`): GET routes need the JWT
 *   scope `ops:read`, POST routes `ops:write`; anyone else gets 404, as for a path that does not exist.
 * - `GET /api/openapi.json` — public, no token: 200 the OpenAPI 3.1 document of these routes (`lib/http/openapi.ts`),
 *   built once per process.
 */
export const API_ROUTES: readonly ApiRoute[] = [
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations',
    doc: ROUTE_DOCS.admitOperation,
    async handle(scope, deps, event) {
      return admissionResponse(await admitOperation(scope, deps, event.headers?.['idempotency-key'], parseJsonObjectBody(event)));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/operations',
    doc: ROUTE_DOCS.listOperations,
    async handle(scope, _deps, event) {
      const page = await listOperations(scope, event.queryStringParameters ?? {});
      return jsonResponse(200, OperationPageDtoSchema, { items: page.items.map(toOperationDto), nextCursor: page.nextCursor });
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/operations/{id}',
    doc: ROUTE_DOCS.getOperation,
    async handle(scope, _deps, event) {
      return jsonResponse(200, OperationDtoSchema, toOperationDto(await getOperation(scope, event.pathParameters?.id)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations/{id}/cancel',
    doc: ROUTE_DOCS.cancelOperation,
    async handle(scope, deps, event) {
      return jsonResponse(200, OperationDtoSchema, toOperationDto(await cancelOperation(scope, event.pathParameters?.id, deps)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/operations/{id}/retry',
    doc: ROUTE_DOCS.retryOperation,
    async handle(scope, deps, event) {
      return jsonResponse(202, OperationDtoSchema, toOperationDto(await retryOperation(scope, deps, event.pathParameters?.id)));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/notifications',
    doc: ROUTE_DOCS.listNotifications,
    async handle(scope, _deps, event) {
      const page = await listNotifications(scope, event.queryStringParameters ?? {});
      return jsonResponse(200, NotificationPageDtoSchema, { items: page.items.map(toNotificationDto), nextCursor: page.nextCursor });
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/me/settings',
    doc: ROUTE_DOCS.getSettings,
    async handle(scope) {
      return jsonResponse(200, OwnerSettingsDtoSchema, await getOwnSettings(scope));
    },
  },
  {
    access: 'owner',
    method: 'PATCH',
    path: '/api/me/settings',
    doc: ROUTE_DOCS.updateSettings,
    async handle(scope, _deps, event) {
      return jsonResponse(200, OwnerSettingsDtoSchema, await updateOwnSettings(scope, parseJsonObjectBody(event)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/jobs',
    doc: ROUTE_DOCS.createJob,
    async handle(scope, _deps, event) {
      const dto = toJobDto(await createJob(scope, parseJsonObjectBody(event, MAX_JOB_BODY_BYTES)));
      return jsonResponse(201, JobDtoSchema, dto, { location: jobUrlOf(dto.id) });
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/jobs/{jobId}',
    doc: ROUTE_DOCS.getJob,
    async handle(scope, _deps, event) {
      return jsonResponse(200, JobDtoSchema, toJobDto(await getJob(scope, event.pathParameters?.jobId)));
    },
  },
  {
    access: 'owner',
    method: 'POST',
    path: '/api/jobs/{jobId}/strategy-snapshot',
    doc: ROUTE_DOCS.requestStrategySnapshot,
    async handle(scope, deps, event) {
      return admissionResponse(await requestStrategySnapshot(scope, deps, event.pathParameters?.jobId, event.headers?.['idempotency-key']));
    },
  },
  {
    access: 'owner',
    method: 'GET',
    path: '/api/jobs/{jobId}/strategy-snapshot',
    doc: ROUTE_DOCS.readStrategySnapshot,
    async handle(scope, _deps, event) {
      return jsonResponse(200, StrategySnapshotDtoSchema, toStrategySnapshotDto(await readStrategySnapshot(scope, event.pathParameters?.jobId)));
    },
  },
  ...OPERATOR_ROUTES,
  {
    access: 'public',
    method: 'GET',
    path: OPENAPI_DOCUMENT_PATH,
    doc: ROUTE_DOCS.getOpenApiDocument,
    async handle() {
      return openApiResponse(API_ROUTES);
    },
  },
];
