import { z } from 'zod';
import { parseDbTime, toIsoOrNull } from '../../db/db-time.js';
import { failureCodeOf, FailureCodeSchema, type FailureCode } from '../lifecycle/failure-code.js';
import { ALL_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';
import type { OperationRow } from '../store/operation.repository.js';
import type { NotificationRow } from '../store/notification.repository.js';

const isoOrNull = z.string().datetime().nullable();

/** The `failure` member of a DTO: `{code}` for a failed operation, else null. */
function failureOf(column: string | null): { code: FailureCode } | null {
  const code = failureCodeOf(column);
  return code === null ? null : { code };
}

/**
 * The operation as the owner API shows it (docs/design.md §7) — exactly these fields. It deliberately omits the
 * idempotency key, lease token/owner, provider/model/route, failure text and result references.
 */
export const OperationDtoSchema = z
  .object({
    id: z.string(),
    taskType: z.string(),
    status: z.enum(ALL_STATUSES as [OperationStatus, ...OperationStatus[]]),
    subject: z.object({ type: z.string(), id: z.string() }).strict(),
    progress: z.object({ percent: z.number().int().min(0).max(100), stage: z.string().nullable() }).strict(),
    attempt: z.number().int(),
    maxAttempts: z.number().int(),
    cancelRequested: z.boolean(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    startedAt: isoOrNull,
    finishedAt: isoOrNull,
    deadlineAt: z.string().datetime(),
    nextAttemptAt: isoOrNull.meta({
      description:
        'When the operation may start next: in `waiting_for_retry`, its retry time; in `queued`, the time a delayed admission ' +
        '(`delaySeconds` / `runAt`) asked for. Null otherwise. It stays set, in the past, until a worker takes the operation.',
    }),
    statusUrl: z.string(),
    failure: z.object({ code: FailureCodeSchema }).strict().nullable(),
  })
  .strict()
  .meta({ id: 'OperationDto' });

/** See {@link OperationDtoSchema}. */
export type OperationDto = z.infer<typeof OperationDtoSchema>;

/** The status URL of an operation (docs/design.md §4). */
export function statusUrlOf(operationId: string): string {
  return `/api/operations/${operationId}`;
}

/** Maps a row to its {@link OperationDto}; only allow-listed fields are copied. */
export function toOperationDto(row: OperationRow): OperationDto {
  return {
    id: row.id,
    taskType: row.task_type,
    status: row.status,
    subject: { type: row.subject_type, id: row.subject_id },
    progress: { percent: row.progress_percent, stage: row.progress_stage },
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    cancelRequested: row.cancel_requested_at !== null,
    createdAt: parseDbTime(row.created_at).toISOString(),
    updatedAt: parseDbTime(row.updated_at).toISOString(),
    startedAt: toIsoOrNull(row.started_at),
    finishedAt: toIsoOrNull(row.finished_at),
    deadlineAt: parseDbTime(row.deadline_at).toISOString(),
    nextAttemptAt: nextAttemptAtOf(row),
    statusUrl: statusUrlOf(row.id),
    failure: failureOf(row.failure_code),
  };
}

/**
 * When the operation may be claimed next, as the DTO shows it: `available_at` in `waiting_for_retry` (its backoff), and
 * in `queued` when the admission delayed it (docs/design.md §4, delayed operations) — the first cycle's row
 * (`retry_count` 0: an owner retry re-queues for now) whose `available_at` is later than its `created_at`. Null
 * otherwise. A pure function of the row: no clock is read, so a due time stays shown until a claim clears
 * `available_at`, as for a retry.
 */
function nextAttemptAtOf(row: OperationRow): string | null {
  if (row.status === 'waiting_for_retry') return toIsoOrNull(row.available_at);
  if (row.status !== 'queued' || row.retry_count !== 0 || row.available_at === null) return null;
  return parseDbTime(row.available_at) > parseDbTime(row.created_at) ? toIsoOrNull(row.available_at) : null;
}

/** A terminal notification as the owner API shows it. */
export const NotificationDtoSchema = z
  .object({
    operationId: z.string(),
    taskType: z.string(),
    status: z.enum(['succeeded', 'failed', 'cancelled']),
    failure: z.object({ code: FailureCodeSchema }).strict().nullable(),
    createdAt: z.string().datetime(),
    statusUrl: z.string(),
  })
  .strict()
  .meta({ id: 'NotificationDto' });

/** See {@link NotificationDtoSchema}. */
export type NotificationDto = z.infer<typeof NotificationDtoSchema>;

/** Maps a notification row to its {@link NotificationDto}. */
export function toNotificationDto(row: NotificationRow): NotificationDto {
  return {
    operationId: row.operation_id,
    taskType: row.task_type,
    status: row.status as NotificationDto['status'],
    failure: failureOf(row.failure_code),
    createdAt: parseDbTime(row.created_at).toISOString(),
    statusUrl: statusUrlOf(row.operation_id),
  };
}
