import { z } from 'zod';
import { parseDbTime } from '../../db/db-time.js';
import { FailureCode, failureCodeOf, NullableFailureCodeSchema } from '../lifecycle/failure-code.js';
import type { OperationEventRow } from '../store/operation-event.repository.js';
import { ALL_STATUSES, WAITING_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';

/**
 * What one change of an operation was, as the operator console names it, derived from the recorded change
 * (`operation_events`: from, to, failure code — docs/design.md §2's transition table):
 *
 * - `admitted`: ∅ → `queued` (the row was inserted).
 * - `claimed`: → `running` (a worker took a lease; attempt + 1).
 * - `retry_scheduled`: `running` → `waiting_for_retry` after a retryable failure the worker reported.
 * - `lease_lost`: `running` → `waiting_for_retry` | `failed` | `cancelled` by the sweeper because the lease expired
 *   (recorded failure code `lease_expired`).
 * - `fallback_scheduled`: → `waiting_for_external_fallback`.
 * - `succeeded`, `failed`, `cancelled`: the terminal states, reached any other way.
 * - `owner_retry`: `failed` | `cancelled` → `queued` (the owner's retry, or an operator's on their behalf; cycle + 1).
 * - `deadline_passed`: a waiting state → `failed` with `deadline_exceeded`.
 */
export const TIMELINE_KINDS = [
  'admitted',
  'claimed',
  'retry_scheduled',
  'lease_lost',
  'fallback_scheduled',
  'succeeded',
  'failed',
  'cancelled',
  'owner_retry',
  'deadline_passed',
] as const;

/** One of {@link TIMELINE_KINDS}. */
export type TimelineKind = (typeof TIMELINE_KINDS)[number];

const StatusSchema = z.enum(ALL_STATUSES as [OperationStatus, ...OperationStatus[]]);

/**
 * One change of an operation (`GET /api/ops/operations/{id}`): `at` (ISO-8601 UTC, database clock), `kind` (see
 * {@link TIMELINE_KINDS}), `from` (null for the admission) and `to` statuses, and after the change the `attempt` (of
 * the current cycle), the `cycle` (owner retries so far), the bounded `failureCode` (or null) and, on a change to
 * `cancelled`, `cancelledBy`: who had asked for the cancel (an `Actor`, lib/owners/actor.ts; or null).
 */
export const TimelineEventSchema = z.strictObject({
  at: z.string().datetime(),
  kind: z.enum(TIMELINE_KINDS),
  from: StatusSchema.nullable(),
  to: StatusSchema,
  attempt: z.number().int().min(0),
  cycle: z.number().int().min(0),
  failureCode: NullableFailureCodeSchema,
  cancelledBy: z.string().nullable().meta({
    description:
      'On an event that reached `cancelled`: who had asked for the cancel (`owner`, `operator:<sub>`, `cli:<user>@<host>`); ' +
      'null on every other event, and on cancels recorded before the actor was.',
  }),
}).meta({ id: 'TimelineEvent' });

/** See {@link TimelineEventSchema}. */
export type TimelineEvent = z.infer<typeof TimelineEventSchema>;

/** The {@link TimelineKind} of a recorded change (see {@link TIMELINE_KINDS} for the rules, first match wins). */
export function timelineKindOf(from: OperationStatus | null, to: OperationStatus, failureCode: string | null): TimelineKind {
  if (from === null) return 'admitted';
  if (to === 'running') return 'claimed';
  if (from === 'running' && failureCode === FailureCode.leaseExpired && to !== 'waiting_for_external_fallback') return 'lease_lost';
  if (to === 'queued') return 'owner_retry';
  if (to === 'failed' && failureCode === FailureCode.deadlineExceeded && WAITING_STATUSES.includes(from)) return 'deadline_passed';
  if (to === 'waiting_for_retry') return 'retry_scheduled';
  if (to === 'waiting_for_external_fallback') return 'fallback_scheduled';
  return to;
}

/** Maps a recorded change to its {@link TimelineEvent}; only allow-listed fields are copied. */
export function toTimelineEvent(row: OperationEventRow): TimelineEvent {
  return {
    at: parseDbTime(row.at).toISOString(),
    kind: timelineKindOf(row.from_status, row.to_status, row.failure_code),
    from: row.from_status,
    to: row.to_status,
    attempt: row.attempt,
    cycle: row.cycle,
    failureCode: failureCodeOf(row.failure_code),
    cancelledBy: row.cancelled_by,
  };
}
