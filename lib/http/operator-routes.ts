import { recordLifecycle } from '../observability/lifecycle-events.js';
import { getCapacityView, CapacityViewSchema } from '../capacity/capacity-view.js';
import { OperatorOperationDetailSchema, getOperationDetailForOperator } from '../operations/operator/operator-operation-detail.js';
import {
  cancelAsOperator,
  listOperationsForOperator,
  OperatorOperationViewSchema,
  retryAsOperator,
  toOperatorView,
} from '../operations/operator/operator-operations.js';
import { getThroughput, ThroughputDtoSchema } from '../operations/operator/throughput.js';
import { redriveAsOperator, RedriveResultSchema } from '../queue/redrive-as-operator.js';
import { resolveUnknownAsOperator, ResolvedRecoveryDtoSchema } from '../recovery/resolve-unknown-as-operator.js';
import { listUnresolved } from '../recovery/unresolved.js';
import { listSweeperRuns, SweeperRunPageDtoSchema } from '../sweeper/sweeper-runs.js';
import { ROUTE_DOCS } from './api-route-docs.js';
import type { ApiEvent, OperatorRoute } from './api-routes.js';
import { OPS_READ_SCOPE, OPS_WRITE_SCOPE, ownerFromEvent } from './auth.js';
import { parseJsonObjectBody } from './json-body.js';
import { jsonResponse } from './json-response.js';
import { OperatorOperationPageDtoSchema, UnresolvedRecoveryPageDtoSchema } from './page-dto.js';

/** The query-string parameters of an event (none: an empty object). */
const queryOf = (event: ApiEvent) => event.queryStringParameters ?? {};

/** A POST body that may be left out: absent or empty is `{}`, anything else must be a JSON object. */
const optionalBody = (event: ApiEvent) => (event.body === undefined || event.body === '' ? {} : parseJsonObjectBody(event));

/**
 * The operator surface (DESIGN §8 "Ops surface"; the web console of issue 9). Every route is invisible — 404
 * problem+json for any method, exactly as an unknown path — to a caller whose verified scopes lack its scope:
 * `ops:read` for the GET routes, `ops:write` for the POST routes (a caller with `ops:read` only gets 404 on those).
 * Each answers through a strict DTO schema: never a lease token, idempotency key, request hash, params or evidence.
 *
 * - `GET /api/ops/operations?status=&ownerUserId=&taskType=&limit=&cursor=` — 200 `{items, nextCursor}`, every owner's
 *   operations (operator views), newest first.
 * - `GET /api/ops/operations/{id}` — 200 `{operation, timeline, notifications}`.
 * - `POST /api/ops/operations/{id}/cancel` — 200 the operator view after the owner's cancel, on their behalf.
 * - `POST /api/ops/operations/{id}/retry` — 202 the operator view after the owner's retry, on their behalf.
 * - `GET /api/ops/capacity` — 200 `{pools}`: global, route and the 50 fullest owner pools.
 * - `GET /api/ops/recovery?state=&limit=` — 200 `{items}`, the unresolved recovery operations with chain verdicts.
 * - `POST /api/ops/recovery/{id}/resolve-unknown` — body `UnknownResolution`; 200 `{id, state}`.
 * - `POST /api/ops/dlq/redrive` — optional body `{maxMessages}`; 200 `{moved, skipped, rejected}`.
 * - `GET /api/ops/sweeps?limit=` — 200 `{items}`, recorded sweeper runs, newest first.
 * - `GET /api/ops/throughput?minutes=` — 200 `{buckets}`, one per minute, oldest first, zero-filled.
 */
export const OPERATOR_ROUTES: readonly OperatorRoute[] = [
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/operations',
    doc: ROUTE_DOCS.listOperationsForOperator,
    async handle(deps, event) {
      const page = await listOperationsForOperator(deps.store, queryOf(event));
      return jsonResponse(200, OperatorOperationPageDtoSchema, { items: page.items.map(toOperatorView), nextCursor: page.nextCursor });
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/operations/{id}',
    doc: ROUTE_DOCS.getOperationForOperator,
    async handle(deps, event) {
      return jsonResponse(200, OperatorOperationDetailSchema, await getOperationDetailForOperator(deps.store, event.pathParameters?.id));
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/operations/{id}/cancel',
    doc: ROUTE_DOCS.cancelAsOperator,
    async handle(deps, event) {
      const row = await cancelAsOperator(deps.store, event.pathParameters?.id, deps);
      recordLifecycle(deps, { event: 'operator_action', action: 'cancel', operationId: row.id, operator: ownerFromEvent(event), status: row.status });
      return jsonResponse(200, OperatorOperationViewSchema, toOperatorView(row));
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/operations/{id}/retry',
    doc: ROUTE_DOCS.retryAsOperator,
    async handle(deps, event) {
      const row = await retryAsOperator(deps.store, deps, event.pathParameters?.id);
      recordLifecycle(deps, { event: 'operator_action', action: 'retry', operationId: row.id, operator: ownerFromEvent(event), status: row.status });
      return jsonResponse(202, OperatorOperationViewSchema, toOperatorView(row));
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/capacity',
    doc: ROUTE_DOCS.getCapacity,
    async handle(deps) {
      return jsonResponse(200, CapacityViewSchema, await getCapacityView(deps.store, deps.capacity));
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/recovery',
    doc: ROUTE_DOCS.listUnresolvedRecovery,
    async handle(deps, event) {
      const items = await listUnresolved(deps.store, deps.recoveryModules, queryOf(event));
      return jsonResponse(200, UnresolvedRecoveryPageDtoSchema, { items });
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/recovery/{id}/resolve-unknown',
    doc: ROUTE_DOCS.resolveUnknownRecovery,
    async handle(deps, event) {
      const resolved = await resolveUnknownAsOperator(deps.store, {
        operationId: event.pathParameters?.id,
        operator: ownerFromEvent(event),
        resolution: parseJsonObjectBody(event),
      });
      return jsonResponse(200, ResolvedRecoveryDtoSchema, resolved);
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/dlq/redrive',
    doc: ROUTE_DOCS.redriveDeadLetters,
    async handle(deps, event) {
      return jsonResponse(200, RedriveResultSchema, await redriveAsOperator(deps, ownerFromEvent(event), optionalBody(event)));
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/sweeps',
    doc: ROUTE_DOCS.listSweeps,
    async handle(deps, event) {
      return jsonResponse(200, SweeperRunPageDtoSchema, { items: await listSweeperRuns(deps.store, queryOf(event)) });
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/throughput',
    doc: ROUTE_DOCS.getThroughput,
    async handle(deps, event) {
      return jsonResponse(200, ThroughputDtoSchema, await getThroughput(deps.store, queryOf(event)));
    },
  },
];
