import { z } from 'zod';
import { JobDtoSchema } from '../jobs/job-dto.js';
import { CreateJobSchema, JobIdSchema } from '../jobs/jobs.js';
import { AdmitRequestSchema } from '../operations/admission/admission-schema.js';
import { OperationDtoSchema } from '../operations/owner/operation-dto.js';
import { ListNotificationsQuerySchema, ListOperationsQuerySchema } from '../operations/owner/owner-reads.js';
import { OperationIdSchema } from '../operations/operation-id.js';
import { OwnerSettingsDtoSchema, OwnerSettingsPatchSchema } from '../owners/owner-settings.js';
import { UnresolvedListQuerySchema } from '../recovery/unresolved.js';
import { CapacityViewSchema } from '../capacity/capacity-view.js';
import { OperatorOperationDetailSchema } from '../operations/operator/operator-operation-detail.js';
import { OperatorListQuerySchema, OperatorOperationViewSchema } from '../operations/operator/operator-operations.js';
import { ThroughputDtoSchema, ThroughputQuerySchema } from '../operations/operator/throughput.js';
import { RedriveRequestSchema, RedriveResultSchema } from '../queue/redrive-as-operator.js';
import { ResolvedRecoveryDtoSchema } from '../recovery/resolve-unknown-as-operator.js';
import { UnknownResolutionSchema } from '../recovery/unknown-resolution.js';
import { SweeperRunPageDtoSchema, SweepListQuerySchema } from '../sweeper/sweeper-runs.js';
import { StrategySnapshotDtoSchema } from '../features/strategy-snapshot/strategy-snapshot-dto.js';
import { NotificationPageDtoSchema, OperationPageDtoSchema, OperatorOperationPageDtoSchema, UnresolvedRecoveryPageDtoSchema } from './page-dto.js';
import type { ProblemStatus, RouteDoc } from './route-doc.js';

/**
 * The OpenAPI metadata of every route of `API_ROUTES` (DESIGN §7, §8 "Ops surface"), one entry per route, referenced
 * by the route itself. Statuses and rules follow DESIGN §7 and the README's "HTTP API" table; schemas are the ones the
 * services parse with and the handlers answer with.
 */

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

const operationIdParam = z.strictObject({
  id: OperationIdSchema.meta({ description: 'The operation id. A malformed id answers 404, like a missing one or another owner’s.' }),
});

const jobIdParam = z.strictObject({
  jobId: JobIdSchema.meta({ description: 'The job id. A malformed id answers 404, like a missing one or another owner’s.' }),
});

const operatorOperationIdParam = z.strictObject({
  id: OperationIdSchema.meta({ description: 'The operation id, whoever owns it. A malformed id answers 404, like a missing one.' }),
});

const recoveryIdParam = z.strictObject({
  id: z.string().meta({ description: 'The recovery operation id. A malformed id answers 404, like a missing one.' }),
});

/** How an operator route hides (DESIGN §8 "Ops surface"): a 404 for any method, never a 401/403 that would confirm it. */
const HIDDEN_ROUTE = 'To every other caller the route does not exist: a 404 for any method, never a 401/403 that would confirm it (DESIGN §8 "Ops surface").';
const OPS_READ_ONLY = `Needs the JWT scope \`ops:read\`. ${HIDDEN_ROUTE}`;
const OPS_WRITE_ONLY = `Needs the JWT scope \`ops:write\` (\`ops:read\` alone is not enough). ${HIDDEN_ROUTE}`;
const LACKS_READ = 'The caller’s token lacks the `ops:read` scope.';
const LACKS_WRITE = 'The caller’s token lacks the `ops:write` scope.';

/** The problems of an admission (DESIGN §4, §7), shared by `POST /api/operations` and the feature producer. */
const ADMISSION_PROBLEMS = {
  400: 'Missing or malformed `Idempotency-Key`, or an invalid body, task type or params.',
  403: 'The owner is not entitled to the task type (plan or `aiEnabled`); nothing was written.',
  422: 'The `Idempotency-Key` was already used for a different request.',
  429: 'A capacity limit (the owner’s or the service’s) is full; retry after `Retry-After` seconds. A replayed key is never refused for capacity.',
} as const satisfies { readonly [S in ProblemStatus]?: string };

const ADMISSION_DESCRIPTION =
  '`Idempotency-Key` is 1–128 characters of `[A-Za-z0-9._:-]`. A new request answers **202** with `Location`; the same ' +
  'request again under the same key answers **200** with the same operation and `Idempotent-Replayed: true`.';

/** See the module comment: one {@link RouteDoc} per route of `API_ROUTES`. */
export const ROUTE_DOCS = {
  admitOperation: {
    operationId: 'admitOperation',
    tag: 'operations',
    summary: 'Start an operation',
    description: `${ADMISSION_DESCRIPTION} \`params\` is checked again against the task type's own schema.`,
    idempotencyKey: true,
    body: { schema: AdmitRequestSchema, description: 'The task type, its subject and its params.' },
    success: {
      202: { description: 'A new operation was admitted (queued).', schema: OperationDtoSchema, headers: { location: true } },
      200: {
        description: 'A replayed key (with `Idempotent-Replayed: true`), or the active operation of an exclusive subject, reused (with `Location`).',
        schema: OperationDtoSchema,
        headers: { location: false, 'idempotent-replayed': false },
      },
    },
    problems: { ...ADMISSION_PROBLEMS, 404: 'The subject of an exclusive-subject task type is not the owner’s (e.g. `job_not_found`).' },
  },
  listOperations: {
    operationId: 'listOperations',
    tag: 'operations',
    summary: 'List the owner’s operations, newest first',
    description: '`limit` is 1–100 (default 20); pass `nextCursor` back as `cursor` for the next page. The cursor is opaque.',
    query: ListOperationsQuerySchema,
    success: { 200: { description: 'A page of operations.', schema: OperationPageDtoSchema } },
    problems: { 400: 'An invalid filter, limit or cursor.' },
  },
  getOperation: {
    operationId: 'getOperation',
    tag: 'operations',
    summary: 'Read an operation',
    pathParams: operationIdParam,
    success: { 200: { description: 'The operation.', schema: OperationDtoSchema } },
    problems: { 404: 'No such operation for this owner (another owner’s is a 404 too, never a 403).' },
  },
  cancelOperation: {
    operationId: 'cancelOperation',
    tag: 'operations',
    summary: 'Cancel an operation',
    description: 'A queued or waiting operation is cancelled at once; a running one gets `cancelRequested: true` and stops at its next checkpoint.',
    pathParams: operationIdParam,
    success: { 200: { description: 'The operation: `cancelled`, or `running` with `cancelRequested: true`.', schema: OperationDtoSchema } },
    problems: { 404: 'No such operation for this owner.', 409: 'The operation already succeeded or failed.' },
  },
  retryOperation: {
    operationId: 'retryOperation',
    tag: 'operations',
    summary: 'Retry a failed or cancelled operation',
    pathParams: operationIdParam,
    success: { 202: { description: 'The operation, `queued` again.', schema: OperationDtoSchema } },
    problems: {
      403: 'The owner is no longer entitled to the task type.',
      404: 'No such operation for this owner, or the subject of an exclusive-subject task is gone.',
      409: 'The operation is not failed or cancelled, its manual-retry budget is used up, or (`subject_busy`, with `statusUrl`) another operation is active on its exclusive subject.',
      429: ADMISSION_PROBLEMS[429],
    },
  },
  listNotifications: {
    operationId: 'listNotifications',
    tag: 'notifications',
    summary: 'List the owner’s terminal notifications, newest first',
    description: '`limit` is 1–100 (default 20); pass `nextCursor` back as `cursor` for the next page.',
    query: ListNotificationsQuerySchema,
    success: { 200: { description: 'A page of notifications.', schema: NotificationPageDtoSchema } },
    problems: { 400: 'An invalid limit or cursor.' },
  },
  getSettings: {
    operationId: 'getSettings',
    tag: 'settings',
    summary: 'Read the owner’s settings',
    success: { 200: { description: 'The settings (defaults for an owner who never changed them).', schema: OwnerSettingsDtoSchema } },
    problems: {},
  },
  updateSettings: {
    operationId: 'updateSettings',
    tag: 'settings',
    summary: 'Change the owner’s settings',
    description: 'The plan is an entitlement only an operator changes: a body naming it is a 400, like any other unknown key.',
    body: { schema: OwnerSettingsPatchSchema, description: '`aiEnabled` and/or `privacyMode`, at least one.' },
    success: { 200: { description: 'The new settings.', schema: OwnerSettingsDtoSchema } },
    problems: { 400: 'Anything but `{aiEnabled?, privacyMode?}` with at least one of them.' },
  },
  createJob: {
    operationId: 'createJob',
    tag: 'jobs',
    summary: 'Create a job',
    description:
      'Title and company are trimmed, then 1–200 characters; the description (1–20,000 characters) is stored as sent. ' +
      'The body may be up to 256 KiB. Each POST creates a job: there is no idempotency key.',
    body: { schema: CreateJobSchema, description: 'The job’s title, company and description.' },
    success: { 201: { description: 'The job was created.', schema: JobDtoSchema, headers: { location: true } } },
    problems: { 400: 'An invalid or oversized body.' },
  },
  getJob: {
    operationId: 'getJob',
    tag: 'jobs',
    summary: 'Read a job',
    pathParams: jobIdParam,
    success: { 200: { description: 'The job.', schema: JobDtoSchema } },
    problems: { 404: 'No such job for this owner (`job_not_found`).' },
  },
  requestStrategySnapshot: {
    operationId: 'requestStrategySnapshot',
    tag: 'strategy snapshot',
    summary: 'Start producing a job’s strategy snapshot',
    description:
      `A feature producer (DESIGN §7): it calls the same admission as \`POST /api/operations\`, with no body. ${ADMISSION_DESCRIPTION} ` +
      'While a `strategy.snapshot` operation is active for the job, it answers **200** with that operation (and `Location`).',
    idempotencyKey: true,
    pathParams: jobIdParam,
    success: {
      202: { description: 'A new `strategy.snapshot` operation was admitted.', schema: OperationDtoSchema, headers: { location: true } },
      200: {
        description: 'A replayed key (with `Idempotent-Replayed: true`), or the operation already active for the job (with `Location`).',
        schema: OperationDtoSchema,
        headers: { location: false, 'idempotent-replayed': false },
      },
    },
    problems: {
      ...ADMISSION_PROBLEMS,
      400: 'Missing or malformed `Idempotency-Key`.',
      404: 'No such job for this owner (`job_not_found`).',
      422: 'The `Idempotency-Key` was already used for another job.',
    },
  },
  readStrategySnapshot: {
    operationId: 'readStrategySnapshot',
    tag: 'strategy snapshot',
    summary: 'Read a job’s published strategy snapshot (cache only)',
    description: 'Never starts model work: it reads the published snapshot or answers 404.',
    pathParams: jobIdParam,
    success: { 200: { description: 'The published snapshot.', schema: StrategySnapshotDtoSchema } },
    problems: {
      404: '`job_not_found`, or `snapshot_not_found` — with `statusUrl` naming the operation producing it, when one is active.',
    },
  },
  listOperationsForOperator: {
    operationId: 'listOperationsForOperator',
    tag: 'operators',
    summary: 'List every owner’s operations, newest first (operators only)',
    description: `${OPS_READ_ONLY} Filters \`status\`, \`ownerUserId\`, \`taskType\`; \`limit\` 1–100 (default 20); pass \`nextCursor\` back as \`cursor\`.`,
    query: OperatorListQuerySchema,
    success: { 200: { description: 'A page of operator views.', schema: OperatorOperationPageDtoSchema } },
    problems: { 400: 'An invalid filter, limit or cursor (operators only).', 404: LACKS_READ },
  },
  getOperationForOperator: {
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
  cancelAsOperator: {
    operationId: 'cancelAsOperator',
    tag: 'operators',
    summary: 'Cancel an operation on its owner’s behalf (operators only)',
    description: `${OPS_WRITE_ONLY} Exactly the owner’s cancel: a waiting operation is cancelled at once, a running one gets \`cancelRequested\`.`,
    pathParams: operatorOperationIdParam,
    success: { 200: { description: 'The operator view after the cancel.', schema: OperatorOperationViewSchema } },
    problems: { 404: `No such operation. ${LACKS_WRITE}`, 409: 'The operation already succeeded or failed.' },
  },
  retryAsOperator: {
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
  getCapacity: {
    operationId: 'getCapacity',
    tag: 'operators',
    summary: 'Capacity pools and how full they are (operators only)',
    description: `${OPS_READ_ONLY} Every global pool in use, every route pool, and the 50 owner pools holding the most slots (ties by key); \`slots\` is the configured limit.`,
    success: { 200: { description: 'The pools.', schema: CapacityViewSchema } },
    problems: { 404: LACKS_READ },
  },
  listUnresolvedRecovery: {
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
  resolveUnknownRecovery: {
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
  redriveDeadLetters: {
    operationId: 'redriveDeadLetters',
    tag: 'operators',
    summary: 'Move dead letters back to the worker queue, each once (operators only)',
    description: `${OPS_WRITE_ONLY} The body is optional: \`{"maxMessages": 1–100}\` (default 100). Each message goes through the recovery ledger, so none is sent twice.`,
    body: { schema: RedriveRequestSchema, description: 'Optional: how many dead letters to take at most.' },
    success: { 200: { description: 'How many were moved, skipped (already redriven once) and rejected by SQS.', schema: RedriveResultSchema } },
    problems: { 400: 'An invalid body.', 404: LACKS_WRITE, 409: 'No dead-letter queue is configured (`SQS_DLQ_URL`).' },
  },
  listSweeps: {
    operationId: 'listSweeps',
    tag: 'operators',
    summary: 'Recorded sweeper runs, newest first (operators only)',
    description: `${OPS_READ_ONLY} \`limit\` 1–100 (default 20); runs are kept for 7 days.`,
    query: SweepListQuerySchema,
    success: { 200: { description: 'The latest sweeper runs with their counts.', schema: SweeperRunPageDtoSchema } },
    problems: { 400: 'An invalid limit (operators only).', 404: LACKS_READ },
  },
  getThroughput: {
    operationId: 'getThroughput',
    tag: 'operators',
    summary: 'Operations admitted, succeeded, failed and cancelled per minute (operators only)',
    description: `${OPS_READ_ONLY} \`minutes\` 1–1440 (default 60), ending with the current minute; one bucket per minute, oldest first, zero-filled.`,
    query: ThroughputQuerySchema,
    success: { 200: { description: 'The buckets.', schema: ThroughputDtoSchema } },
    problems: { 400: 'An invalid `minutes` (operators only).', 404: LACKS_READ },
  },
  getOpenApiDocument: {
    operationId: 'getOpenApiDocument',
    tag: 'meta',
    summary: 'This OpenAPI 3.1 document',
    description: 'Public: no token needed. Generated from the routes’ zod schemas, once per process.',
    success: { 200: { description: 'The OpenAPI 3.1 document of this API.', schema: OpenApiDocumentSchema } },
    problems: {},
  },
} as const satisfies Record<string, RouteDoc>;
