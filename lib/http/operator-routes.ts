import { z } from 'zod';
import { getCapacityView, CapacityViewSchema } from '../capacity/capacity-view.js';
import { recordLifecycle } from '../observability/lifecycle-events.js';
import { OperationIdSchema } from '../operations/operation-id.js';
import { OperatorOperationDetailSchema, getOperationDetailForOperator } from '../operations/operator/operator-operation-detail.js';
import {
  cancelAsOperator,
  listOperationsForOperator,
  OperatorListQuerySchema,
  OperatorOperationViewSchema,
  retryAsOperator,
  toOperatorView,
} from '../operations/operator/operator-operations.js';
import { getThroughput, ThroughputDtoSchema, ThroughputQuerySchema } from '../operations/operator/throughput.js';
import { redriveAsOperator, RedriveRequestSchema, RedriveResultSchema } from '../queue/redrive-as-operator.js';
import { resolveUnknownAsOperator, ResolvedRecoveryDtoSchema } from '../recovery/resolve-unknown-as-operator.js';
import { UnknownResolutionSchema } from '../recovery/unknown-resolution.js';
import { listUnresolved, UnresolvedListQuerySchema } from '../recovery/unresolved.js';
import { listSweeperRuns, SweeperRunPageDtoSchema, SweepListQuerySchema } from '../sweeper/sweeper-runs.js';
import { ADMISSION_PROBLEMS } from './admission-response.js';
import { OPS_READ_SCOPE, OPS_WRITE_SCOPE, ownerFromEvent } from './auth.js';
import { operatorActor } from '../owners/actor.js';
import { parseJsonObjectBody } from './json-body.js';
import { jsonResponse } from './json-response.js';
import { OperatorOperationPageDtoSchema, UnresolvedRecoveryPageDtoSchema } from './page-dto.js';
import type { ApiEvent, OperatorRoute } from './route-types.js';

/** The query-string parameters of an event (none: an empty object). */
const queryOf = (event: ApiEvent) => event.queryStringParameters ?? {};

/** A POST body that may be left out: absent or empty is `{}`, anything else must be a JSON object. */
const optionalBody = (event: ApiEvent) => (event.body === undefined || event.body === '' ? {} : parseJsonObjectBody(event));

const operatorOperationIdParam = z.strictObject({
  id: OperationIdSchema.meta({ description: 'The operation id, whoever owns it. A malformed id answers 404, like a missing one.' }),
});

const recoveryIdParam = z.strictObject({
  id: z.string().meta({ description: 'The recovery operation id. A malformed id answers 404, like a missing one.' }),
});

/** How an operator route hides (docs/design.md §8 "Ops surface"): a 404 for any method, never a 401/403 that would confirm it. */
const HIDDEN_ROUTE = 'To every other caller the route does not exist: a 404 for any method, never a 401/403 that would confirm it (docs/design.md §8 "Ops surface").';
const OPS_READ_ONLY = `Needs the JWT scope \`ops:read\`. ${HIDDEN_ROUTE}`;
const OPS_WRITE_ONLY = `Needs the JWT scope \`ops:write\` (\`ops:read\` alone is not enough). ${HIDDEN_ROUTE}`;
const LACKS_READ = 'The caller’s token lacks the `ops:read` scope.';
const LACKS_WRITE = 'The caller’s token lacks the `ops:write` scope.';

/**
 * The operator surface (docs/design.md §8 "Ops surface"; the web console), each route with its OpenAPI description (which the
 * public document leaves out, `lib/http/openapi.ts`). Every route is invisible — 404 problem+json for any method,
 * exactly as an unknown path — to a caller whose verified scopes lack its scope: `ops:read` for the GET routes,
 * `ops:write` for the POST routes (a caller with `ops:read` only gets 404 on those). Each answers through a strict DTO
 * schema: never a lease token, idempotency key, request hash, params or evidence.
 *
 * - `GET /api/ops/operations?status=&ownerUserId=&taskType=&limit=&cursor=` — 200 `{items, nextCursor}`, every owner's
 *   operations (operator views), newest first.
 * - `GET /api/ops/operations/{id}` — 200 `{operation, timeline, notifications}`.
 * - `POST /api/ops/operations/{id}/cancel` — 200 the operator view after the owner's cancel, on their behalf.
 * - `POST /api/ops/operations/{id}/retry` — 202 the operator view after the owner's retry, on their behalf.
 * - `GET /api/ops/capacity` — 200 `{pools, runningByTaskType}`: global, route, the 50 fullest owner pools and the 50
 *   fullest running pools (running per owner); running attempts per task type.
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
    doc: {
      operationId: 'listOperationsForOperator',
      tag: 'operators',
      summary: 'List every owner’s operations, newest first (operators only)',
      description: `${OPS_READ_ONLY} Filters \`status\`, \`ownerUserId\`, \`taskType\`; \`limit\` 1–100 (default 20); pass \`nextCursor\` back as \`cursor\`.`,
      query: OperatorListQuerySchema,
      success: { 200: { description: 'A page of operator views.', schema: OperatorOperationPageDtoSchema } },
      problems: { 400: 'An invalid filter, limit or cursor (operators only).', 404: LACKS_READ },
    },
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
    doc: {
      operationId: 'getOperationForOperator',
      tag: 'operators',
      summary: 'Read any operation with its timeline and notifications (operators only)',
      description:
        `${OPS_READ_ONLY} The timeline has one event per change of status or attempt, oldest first, each with its kind ` +
        '(`admitted`, `claimed`, `retry_scheduled`, `lease_lost`, `fallback_scheduled`, `succeeded`, `failed`, `cancelled`, ' +
        '`owner_retry`, `deadline_passed`); at most the latest 500 events and notifications.',
      pathParams: operatorOperationIdParam,
      success: { 200: { description: 'The operation, its timeline and its terminal notifications.', schema: OperatorOperationDetailSchema } },
      problems: { 404: `No such operation. ${LACKS_READ}` },
    },
    async handle(deps, event) {
      return jsonResponse(200, OperatorOperationDetailSchema, await getOperationDetailForOperator(deps.store, event.pathParameters?.id));
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/operations/{id}/cancel',
    doc: {
      operationId: 'cancelAsOperator',
      tag: 'operators',
      summary: 'Cancel an operation on its owner’s behalf (operators only)',
      description: `${OPS_WRITE_ONLY} Exactly the owner’s cancel: a waiting operation is cancelled at once, a running one gets \`cancelRequested\`. Recorded as requested by \`operator:<sub>\` (\`cancelRequestedBy\`), unless a cancel was already requested.`,
      pathParams: operatorOperationIdParam,
      success: { 200: { description: 'The operator view after the cancel.', schema: OperatorOperationViewSchema } },
      problems: { 404: `No such operation. ${LACKS_WRITE}`, 409: 'The operation already succeeded or failed.' },
    },
    async handle(deps, event) {
      const operator = ownerFromEvent(event);
      const row = await cancelAsOperator(deps.store, event.pathParameters?.id, operatorActor(operator), deps);
      recordLifecycle(deps, { event: 'operator_action', action: 'cancel', operationId: row.id, operator, status: row.status });
      return jsonResponse(200, OperatorOperationViewSchema, toOperatorView(row));
    },
  },
  {
    access: 'operator',
    scope: OPS_WRITE_SCOPE,
    method: 'POST',
    path: '/api/ops/operations/{id}/retry',
    doc: {
      operationId: 'retryAsOperator',
      tag: 'operators',
      summary: 'Retry a failed or cancelled operation on its owner’s behalf (operators only)',
      description: `${OPS_WRITE_ONLY} Exactly the owner’s retry: \`queued\` again with a fresh attempt budget, within the owner’s manual-retry budget and capacity.`,
      pathParams: operatorOperationIdParam,
      success: { 202: { description: 'The operator view, `queued` again.', schema: OperatorOperationViewSchema } },
      problems: {
        403: 'The owner is no longer entitled to the task type.',
        404: `No such operation. ${LACKS_WRITE}`,
        409: 'Not failed or cancelled, the manual-retry budget is used up, or another operation is active on its exclusive subject.',
        429: ADMISSION_PROBLEMS[429],
      },
    },
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
    doc: {
      operationId: 'getCapacity',
      tag: 'operators',
      summary: 'Capacity pools and how full they are (operators only)',
      description:
        `${OPS_READ_ONLY} \`pools\`: every global pool in use, every route pool, the 50 owner pools holding the most slots, then the 50 running pools \`running:<task type>:<owner>\` holding the most (each most first, ties by key; a pool holding nothing is left out); \`slots\` is the configured limit (owner and running pools: under the owner’s plan). ` +
        '`runningByTaskType`: per task type, the running attempts summed over every owner (`running`) and the owners running any (`owners`), most first.',
      success: { 200: { description: 'The pools and the running totals per task type.', schema: CapacityViewSchema } },
      problems: { 404: LACKS_READ },
    },
    async handle(deps) {
      return jsonResponse(200, CapacityViewSchema, await getCapacityView(deps.store, deps.capacity));
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/recovery',
    doc: {
      operationId: 'listUnresolvedRecovery',
      tag: 'operators',
      summary: 'List unresolved durable recovery operations (operators only)',
      description:
        `${OPS_READ_ONLY} ` +
        'Oldest first, at most `limit` (1–100, default 50) items, each with its module’s reconciliation action and its hash chain’s verdict; no cursor, narrow with `state`.',
      query: UnresolvedListQuerySchema,
      success: { 200: { description: 'The unresolved recovery operations.', schema: UnresolvedRecoveryPageDtoSchema } },
      problems: { 400: 'An invalid state or limit (operators only).', 404: LACKS_READ },
    },
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
    doc: {
      operationId: 'resolveUnknownRecovery',
      tag: 'operators',
      summary: 'Resolve an outcome_unknown recovery operation with evidence (operators only)',
      description:
        `${OPS_WRITE_ONLY} Takes the operation over as \`operator:<sub>\` once its holder’s lease expired, then resolves it: ` +
        '`occurred: true` → `succeeded`, `false` → `verified_recovered`. Evidence holds opaque references, digests, counts and result codes only.',
      pathParams: recoveryIdParam,
      body: { schema: UnknownResolutionSchema, description: '`occurred` and a verification of 1–16 named checks with evidence.' },
      success: { 200: { description: 'The operation and the state it was left in.', schema: ResolvedRecoveryDtoSchema } },
      problems: {
        400: 'An invalid resolution or evidence (including secret-looking evidence), with field errors.',
        404: `No such recovery operation. ${LACKS_WRITE}`,
        409: 'Not `outcome_unknown`, a live lease holds it, or its hash chain does not verify.',
      },
    },
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
    doc: {
      operationId: 'redriveDeadLetters',
      tag: 'operators',
      summary: 'Move dead letters back to the worker queue, each once (operators only)',
      description: `${OPS_WRITE_ONLY} The body is optional: \`{"maxMessages": 1–100}\` (default 100). Each message goes through the recovery ledger, so none is sent twice.`,
      body: { schema: RedriveRequestSchema, description: 'Optional: how many dead letters to take at most.' },
      success: { 200: { description: 'How many were moved, skipped (already redriven once) and rejected by SQS.', schema: RedriveResultSchema } },
      problems: { 400: 'An invalid body.', 404: LACKS_WRITE, 409: 'No dead-letter queue is configured (`SQS_DLQ_URL`).' },
    },
    async handle(deps, event) {
      return jsonResponse(200, RedriveResultSchema, await redriveAsOperator(deps, ownerFromEvent(event), optionalBody(event)));
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/sweeps',
    doc: {
      operationId: 'listSweeps',
      tag: 'operators',
      summary: 'Recorded sweeper runs, newest first (operators only)',
      description: `${OPS_READ_ONLY} \`limit\` 1–100 (default 20); runs are kept for 7 days.`,
      query: SweepListQuerySchema,
      success: { 200: { description: 'The latest sweeper runs with their counts.', schema: SweeperRunPageDtoSchema } },
      problems: { 400: 'An invalid limit (operators only).', 404: LACKS_READ },
    },
    async handle(deps, event) {
      return jsonResponse(200, SweeperRunPageDtoSchema, { items: await listSweeperRuns(deps.store, queryOf(event)) });
    },
  },
  {
    access: 'operator',
    scope: OPS_READ_SCOPE,
    method: 'GET',
    path: '/api/ops/throughput',
    doc: {
      operationId: 'getThroughput',
      tag: 'operators',
      summary: 'Operations admitted, succeeded, failed and cancelled per minute (operators only)',
      description: `${OPS_READ_ONLY} \`minutes\` 1–1440 (default 60), ending with the current minute; one bucket per minute, oldest first, zero-filled.`,
      query: ThroughputQuerySchema,
      success: { 200: { description: 'The buckets.', schema: ThroughputDtoSchema } },
      problems: { 400: 'An invalid `minutes` (operators only).', 404: LACKS_READ },
    },
    async handle(deps, event) {
      return jsonResponse(200, ThroughputDtoSchema, await getThroughput(deps.store, queryOf(event)));
    },
  },
];
