import { z } from 'zod';
import { ModelAttemptSchema, parseModelAttempts } from '../../ai/model-provenance.js';
import { toIsoOrNull } from '../../db/db-time.js';
import type { Store } from '../../db/store.js';
import { OperationNotFoundError } from '../../errors.js';
import { TASK_TYPE_PATTERN } from '../../validation/field-limits.js';
import { decodeCursor, encodeCursor } from '../../paging/list-cursor.js';
import { OperationDtoSchema, toOperationDto } from '../owner/operation-dto.js';
import { findOperationById, listOperationsWhere, type OperationRow } from '../store/operation.repository.js';
import { ALL_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';
import { cancelOperation, retryOperation, type RetryDeps } from '../owner/owner-commands.js';
import { LimitSchema, pageOf, type Page } from '../../paging/page.js';
import { OperationIdSchema } from '../operation-id.js';
import { OwnerUserIdSchema } from '../../owners/owner-user-id.js';
import { PrivacyModeSchema } from '../../owners/privacy-mode.js';
import { OwnerScope } from '../scopes.js';
import { parseOrThrow } from '../../validation/parse-or-throw.js';
import type { Telemetry } from '../../observability/lifecycle-events.js';
import type { Actor } from '../../owners/actor.js';

/**
 * Query of the operator's operation listing (docs/design.md §8 ops surface; `durable-ops list`): optional `status`,
 * `ownerUserId` (an owner id, `OwnerUserIdSchema`; exact) and `taskType` filters, `limit` 1–100 (default 20), opaque `cursor`.
 */
export const OperatorListQuerySchema = z.strictObject({
  status: z.enum(ALL_STATUSES as [OperationStatus, ...OperationStatus[]]).optional(),
  ownerUserId: OwnerUserIdSchema.optional(),
  taskType: z.string().regex(TASK_TYPE_PATTERN).optional(),
  limit: LimitSchema,
  cursor: z.string().min(1).max(200).optional(),
});

/**
 * An operation as an operator sees it over HTTP (the console): the owner DTO plus the owner, the privacy snapshot, lease
 * timing, owner retries used, who asked for its cancel (an `Actor`, or null) and the model provenance (docs/design.md §5). Never the lease token, the idempotency key, the
 * request hash, the params — nor the free-form failure text, which task code writes and may quote content: only the
 * CLI, run by whoever holds the database credentials, shows it ({@link OperatorOperationDetailsSchema}).
 */
export const OperatorOperationViewSchema = OperationDtoSchema.extend({
  ownerUserId: z.string(),
  privacyMode: PrivacyModeSchema,
  retryCount: z.number().int(),
  leaseExpiresAt: z.string().datetime().nullable(),
  heartbeatAt: z.string().datetime().nullable(),
  cancelRequestedBy: z.string().nullable().meta({
    description:
      'Who asked for the cancel: `owner`, `operator:<sub>` (an operator over this API) or `cli:<user>@<host>` (`durable-ops cancel`); ' +
      'null when no cancel was requested, or when it was requested before the actor was recorded.',
  }),
  modelAttempts: z.array(ModelAttemptSchema),
})
  .strict()
  .meta({ id: 'OperatorOperationView' });

/** See {@link OperatorOperationViewSchema}. */
export type OperatorOperationView = z.infer<typeof OperatorOperationViewSchema>;

/** The CLI's view (`durable-ops show`): {@link OperatorOperationViewSchema} plus the operator-only failure text. */
export const OperatorOperationDetailsSchema = OperatorOperationViewSchema.extend({ failureMessage: z.string().nullable() }).strict();

/** See {@link OperatorOperationDetailsSchema}. */
export type OperatorOperationDetails = z.infer<typeof OperatorOperationDetailsSchema>;

/** Maps a row to its {@link OperatorOperationDetails} (the CLI's view, with the failure text). */
export function toOperatorDetails(row: OperationRow): OperatorOperationDetails {
  return { ...toOperatorView(row), failureMessage: row.failure_message };
}

/** Maps a row to its {@link OperatorOperationView}; only allow-listed fields are copied. */
export function toOperatorView(row: OperationRow): OperatorOperationView {
  return {
    ...toOperationDto(row),
    ownerUserId: row.owner_user_id,
    privacyMode: row.privacy_mode,
    retryCount: row.retry_count,
    leaseExpiresAt: toIsoOrNull(row.lease_expires_at),
    heartbeatAt: toIsoOrNull(row.heartbeat_at),
    cancelRequestedBy: row.cancel_requested_by,
    modelAttempts: parseModelAttempts(row.model_attempts),
  };
}

/**
 * Every owner's operations, newest first, filtered and paged (operators only: callers must have checked the operator's
 * authority — the CLI holds the database credentials; an HTTP route needs `ops:read`).
 * @throws {ValidationError} for an invalid query or cursor.
 */
export async function listOperationsForOperator(store: Store, query: unknown): Promise<Page<OperationRow>> {
  const q = parseOrThrow(OperatorListQuerySchema, query, 'query');
  const after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const rows = await listOperationsWhere(store, { ownerUserId: q.ownerUserId, status: q.status, taskType: q.taskType, limit: q.limit + 1, after });
  return pageOf(rows, q.limit, (last) => encodeCursor({ createdAt: last.created_at, id: last.id }));
}

/**
 * One operation by id, whoever owns it (operators only, as {@link listOperationsForOperator}).
 * @throws {OperationNotFoundError} for an unknown or malformed id.
 */
export async function getOperationForOperator(store: Store, id: unknown): Promise<OperationRow> {
  const parsed = OperationIdSchema.safeParse(id);
  const row = parsed.success ? await findOperationById(store, parsed.data) : undefined;
  if (!row) throw new OperationNotFoundError(String(id));
  return row;
}

/**
 * Cancels an operation on its owner's behalf (operators only): exactly the owner's cancel (docs/design.md §2) — a waiting
 * operation becomes `cancelled` at once with its notification, a running one gets `cancelRequested` and stops at its
 * next heartbeat — recorded as requested `by` the operator (`operatorActor(sub)` over HTTP, `cliActor()` for the CLI;
 * `cancelRequestedBy` in the view and timeline). A cancel already requested keeps its first actor.
 * @param by who cancels: an `Actor` (`operatorActor`, `cliActor`; exported with `assertActor`).
 * @param telemetry where the change is logged and counted, as for the owner's cancel. @default nowhere
 * @throws {OperationNotFoundError} for an unknown or malformed id.
 * @throws {InvalidTransitionError} when it already succeeded or failed (409).
 * @throws {TypeError} `by` is not an `Actor` (`assertActor`); nothing changed.
 */
export async function cancelAsOperator(store: Store, id: unknown, by: Actor, telemetry?: Telemetry): Promise<OperationRow> {
  const row = await getOperationForOperator(store, id);
  return cancelOperation(new OwnerScope(store, row.owner_user_id), row.id, telemetry, by);
}

/**
 * Retries a failed or cancelled operation on its owner's behalf (operators only): exactly the owner's retry (docs/design.md §2,
 * `retryOperation`) — `queued` again with a fresh attempt budget and deadline, admission capacity reserved again, the
 * owner's entitlement rechecked, bounded by `MAX_MANUAL_RETRIES`, a wake-up sent after the commit.
 * @throws {OperationNotFoundError} for an unknown or malformed id (404).
 * @throws {InvalidTransitionError | RetryLimitReachedError | SubjectBusyError} not failed/cancelled, retries used up, or
 * another operation active on its exclusive subject (409).
 * @throws {NotEntitledError} the owner is no longer entitled to the task type (403).
 * @throws {CapacityExhaustedError} the owner's or the global limit is full (429); nothing changed.
 * @throws {RateLimitedError} the owner's admission rate bucket for the task type is empty (429): an operator's retry
 * spends the owner's token like the owner's own retry; nothing changed.
 */
export async function retryAsOperator(store: Store, deps: RetryDeps, id: unknown): Promise<OperationRow> {
  const row = await getOperationForOperator(store, id);
  return retryOperation(new OwnerScope(store, row.owner_user_id), deps, row.id);
}
