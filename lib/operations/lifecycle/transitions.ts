import { releaseCapacity } from '../../capacity/capacity.js';
import type { DbContext, TxContext } from '../../db/database.js';
import type { Actor } from '../../owners/actor.js';
import { FieldLimits, truncate } from '../../validation/field-limits.js';
import { insertTerminalNotifications } from '../store/notification.repository.js';
import { markOwnersReady, retireIdleTurns } from '../lease/owner-turns.repository.js';
import type { LeaseKey, NewOperation, OperationRow } from '../store/operation.repository.js';
import type { AttemptOutcome, UncancelledOutcome } from './attempt-outcome.js';
import { FailureCode } from './failure-code.js';
import {
  insertQueued,
  markClaimed,
  targetSize,
  updateStatus,
  type ClaimMark,
  type ExpiredLeaseRow,
  type NonStatusChanges,
  type QueuedTimes,
  type StatusTarget,
} from './lifecycle.repository.js';
import { CLAIMABLE_STATUSES, isTerminal, TRANSITIONS, type OperationEvent, type OperationStatus } from './operation-status.js';

/**
 * Every change of an operation's status, one function per event of the transition table (docs/design.md §2). Each takes the
 * caller's transaction and, in it:
 *
 * 1. runs one guarded UPDATE that sets `status` to the event's `to` only where the status is one of its `from`
 *    ({@link TRANSITIONS}) and the row is the one the caller may write (its lease, its owner, or the sweeper's locked
 *    ids — see `StatusTarget`), so a move that is not in the table cannot be written;
 * 2. checks the row count: none changed → the guard did not hold (the caller's typed outcome: `LeaseLostError`, a
 *    re-read, …); fewer than all of a batch, or any shortfall on rows the sweeper locked →
 *    {@link TransitionRaceError}, and the transaction rolls back;
 * 3. writes the consequences the table's shape implies, in the same transaction: a move to a terminal state writes
 *    exactly one terminal notification, releases every capacity slot and clears the lease; a move from `running` back
 *    to a waiting state clears the lease and gives back the execution slots (route, owner running), keeping the
 *    admission slots; a terminal move of the worker's or the owner's (not the sweeper's, whose batches may all be
 *    one owner's: its turns are left to the claims, which retire the empty turns they read) also deletes the owner's
 *    turn when nothing of the pair is claimable any more (`retireIdleTurns`); a move into a claimable state (and `admit`) makes its owner's turn ready (`markOwnersReady`:
 *    the fair claim order, docs/design.md §4) from the row's `available_at` on.
 *
 * Nothing else in the code writes `operations.status`: the statements are in `lifecycle.repository.ts`, and only this
 * module calls them.
 */

/** Thrown when a guarded UPDATE of several rows changed some but not all of them: the transaction is rolled back. */
export class TransitionRaceError extends Error {
  constructor(event: OperationEvent, changed: number, expected: number) {
    super(`guarded ${event} changed ${changed} of ${expected} rows`);
    this.name = 'TransitionRaceError';
  }
}

type Now = ReturnType<DbContext['timeAt']>;

/** The lease columns every move out of `running` clears. */
const LEASE_CLEARED = { lease_token: null, lease_expires_at: null } as const;

/**
 * The one write of every move: the guarded UPDATE for `event` on `target`, its row-count check and its consequences.
 * Returns true when every targeted row moved, false when none did.
 * @throws {TransitionRaceError} when only some did, or (sweeper-locked `ids`) any did not.
 */
async function move(
  tx: TxContext,
  event: OperationEvent,
  target: StatusTarget,
  changes: (now: Now) => NonStatusChanges,
  reserve?: (ids: readonly string[]) => Promise<void>,
): Promise<boolean> {
  const { from, to } = TRANSITIONS[event];
  const ids = target.by === 'lease' ? target.leases.map((lease) => lease.operationId) : target.by === 'ids' ? target.ids : [target.id];
  if (ids.length === 0) return true;
  const terminal = isTerminal(to);
  const leavesRun = from.includes('running') && to !== 'running';
  const changed = await updateStatus(tx, from, to, target, (now) => ({
    ...(leavesRun ? LEASE_CLEARED : {}),
    ...(terminal ? { finished_at: now, available_at: null, wake_at: null } : {}),
    ...changes(now),
  }));
  // The sweeper's rows are locked by its own transaction: for them, any shortfall is a race, not an outcome.
  if (changed === 0 && target.by !== 'ids') return false;
  if (changed !== targetSize(target)) throw new TransitionRaceError(event, changed, targetSize(target));
  if (terminal) {
    await insertTerminalNotifications(tx, ids);
    await releaseCapacity(tx, ids, 'all', leavesRun);
    if (target.by !== 'ids') await retireIdleTurns(tx, ids);
  } else if (leavesRun) {
    await releaseCapacity(tx, ids, 'execution', true);
  }
  if (reserve) await reserve(ids);
  if (CLAIMABLE_STATUSES.includes(to)) await markOwnersReady(tx, ids);
  return true;
}

/** The failure columns of a move: the bounded code (owner-visible) and the operator-only message, truncated. */
function failureColumns(code: FailureCode | null, message: string): NonStatusChanges {
  return { failure_code: code, failure_message: truncate(message, FieldLimits.failureMessage) };
}

/**
 * `admit`: inserts the row as `queued` with its `times` (see `insertQueued`), has the caller `reserve` its capacity
 * (the owner's counter, before the turn: the lock order of `owner-capacity.repository.ts`; a throw rolls everything
 * back) and makes its owner's turn ready from the row's `available_at` on (a delayed operation's turn is not read
 * before it is due).
 */
export async function admitQueued(
  tx: TxContext,
  row: NewOperation,
  times: QueuedTimes,
  reserve: (id: string) => Promise<void>,
): Promise<OperationRow> {
  const inserted = await insertQueued(tx, row, times);
  await reserve(inserted.id);
  await markOwnersReady(tx, [inserted.id]);
  return inserted;
}

/**
 * `claim`: the locked candidates → `running`, each with its fresh lease (see `markClaimed`). The claimer reserved any
 * route slot in the same transaction first.
 * @throws {Error} when a mark names a status the table does not claim from, or fewer rows changed than were locked
 * (both unreachable: the candidates were selected claimable and locked).
 */
export async function claimLocked(tx: TxContext, marks: readonly ClaimMark[]): Promise<void> {
  for (const mark of marks) {
    if (!TRANSITIONS.claim.from.includes(mark.fromStatus)) throw new Error(`claim from ${mark.fromStatus} is not in the transition table`);
  }
  const changed = await markClaimed(tx, marks);
  if (changed !== marks.length) throw new TransitionRaceError('claim', changed, marks.length);
}

/**
 * `complete`: `running → succeeded` for every listed lease (progress 100), with their notifications and capacity.
 * @returns false when no lease holds (nothing changed).
 * @throws {TransitionRaceError} when some of several leases no longer hold (the caller locked them first).
 */
export function completeUnderLease(tx: TxContext, leases: readonly LeaseKey[]): Promise<boolean> {
  return move(tx, 'complete', { by: 'lease', leases }, () => ({ failure_code: null, failure_message: null, progress_percent: 100 }));
}

/**
 * `acknowledge_cancel`: `running → cancelled` under the lease, only where the owner's cancel is recorded.
 * @returns false when the lease is gone or no cancel was requested (nothing changed).
 */
export function acknowledgeCancelUnderLease(tx: TxContext, lease: LeaseKey): Promise<boolean> {
  return move(tx, 'acknowledge_cancel', { by: 'lease', leases: [lease], cancel: 'requested' }, () => ({ failure_code: null, failure_message: null }));
}

/**
 * Writes a failed attempt's outcome under its lease: `decided` (from `attemptOutcome` with `cancelRequested: false`)
 * only while no cancel is recorded, else `cancelled` (`acknowledge_cancel`) — the owner's cancel always wins, in the
 * same transaction, even when it committed after the worker decided. The statement decides, not an earlier read:
 * ```
 *   owner:  cancel ── UPDATE cancel_requested_at (running) ── commit
 *   worker: decide retry ─────────────────────────────────────── UPDATE … AND cancel_requested_at IS NULL → 0 rows
 *                                                               UPDATE → cancelled … IS NOT NULL → 1 row ✓
 * ```
 * `waiting_for_retry` becomes claimable `retryInMs` after the database clock; `waitingWakeMs` is when, from now, the
 * sweeper re-sends a wake-up for a waiting outcome if none arrived (ms). `message` is operator-only (truncated).
 * @returns the status written, or null when the lease is gone (nothing changed).
 */
export async function failAttempt(
  tx: TxContext,
  lease: LeaseKey,
  decided: UncancelledOutcome,
  message: string,
  waitingWakeMs: number,
): Promise<UncancelledOutcome['status'] | 'cancelled' | null> {
  const target: StatusTarget = { by: 'lease', leases: [lease], cancel: 'not_requested' };
  let moved: boolean;
  if (decided.status === 'failed') {
    moved = await move(tx, decided.event, target, () => failureColumns(decided.failureCode, message));
  } else if (decided.status === 'waiting_for_external_fallback') {
    moved = await move(tx, decided.event, target, (now) => ({ ...failureColumns(null, message), available_at: now, wake_at: tx.timeAt(waitingWakeMs) }));
  } else {
    moved = await move(tx, decided.event, target, () => ({ ...failureColumns(null, message), available_at: tx.timeAt(decided.retryInMs), wake_at: tx.timeAt(waitingWakeMs) }));
  }
  if (moved) return decided.status;
  return (await acknowledgeCancelUnderLease(tx, lease)) ? 'cancelled' : null;
}

/**
 * `request_cancel`: a cancel of a `running` operation — it stays `running` with `cancel_requested_at` and
 * `cancel_requested_by` (`by`, an `Actor`) set, and its worker stops at its next heartbeat. The first request is the one
 * recorded: the first is written only while none is (`cancel_requested_at IS NULL`, decided by the statement, so of
 * two racing first requests one writes and the other finds 0 rows); a later one changes no cancel column. `earlier`
 * is the row as read.
 * @returns false when it is no longer `running`, or a racing request was recorded first (the caller re-reads and
 * decides again).
 */
export function requestCancel(tx: TxContext, earlier: Pick<OperationRow, 'id' | 'owner_user_id' | 'cancel_requested_at'>, by: Actor): Promise<boolean> {
  const first = earlier.cancel_requested_at === null;
  const target: StatusTarget = { by: 'owner', ownerUserId: earlier.owner_user_id, id: earlier.id, cancel: first ? 'not_requested' : 'requested' };
  return move(tx, 'request_cancel', target, (now) => (first ? { cancel_requested_at: now, cancel_requested_by: by } : {}));
}

/**
 * `owner_cancel`: a waiting operation (`queued`, `waiting_*`) → `cancelled` at once, with its notification and capacity;
 * `by` (an `Actor`) is recorded as `cancel_requested_by`, and in its timeline event.
 * @returns false when it is no longer waiting (the caller re-reads and decides again).
 */
export function cancelWaiting(tx: TxContext, ownerUserId: string, id: string, by: Actor): Promise<boolean> {
  return move(tx, 'owner_cancel', { by: 'owner', ownerUserId, id }, (now) => ({ cancel_requested_at: now, cancel_requested_by: by }));
}

/** What an owner retry resets the operation to: a fresh budget, a new deadline (ms from now) and wake-up (ms from now). */
export interface RetryCycle {
  readonly maxAttempts: number;
  readonly privacyMode: OperationRow['privacy_mode'];
  readonly deadlineMs: number;
  readonly wakeMs: number;
}

/**
 * `owner_retry`: `failed` / `cancelled` → `queued` with attempts reset, the next cycle counted and everything of the
 * last cycle cleared — only while the row is still in `row.status` with `row.retry_count` (a decision on a stale read
 * never applies). `reserve` takes the admission capacity again, after the row moved and before its turn is written
 * (the lock order of `owner-capacity.repository.ts`; a throw rolls everything back).
 * @returns false when the row changed since it was read (nothing changed, nothing reserved).
 */
export function requeueForRetry(
  tx: TxContext,
  row: Pick<OperationRow, 'id' | 'owner_user_id' | 'status' | 'retry_count'>,
  cycle: RetryCycle,
  reserve: () => Promise<void>,
): Promise<boolean> {
  if (!TRANSITIONS.owner_retry.from.includes(row.status)) return Promise.resolve(false);
  const target: StatusTarget = { by: 'owner', ownerUserId: row.owner_user_id, id: row.id, retryCount: row.retry_count };
  return move(tx, 'owner_retry', target, (now) => ({
    attempt: 0,
    max_attempts: cycle.maxAttempts,
    retry_count: row.retry_count + 1,
    ...LEASE_CLEARED,
    heartbeat_at: null,
    cancel_requested_at: null,
    cancel_requested_by: null,
    progress_percent: 0,
    progress_stage: null,
    failure_code: null,
    failure_message: null,
    started_at: null,
    finished_at: null,
    available_at: now,
    privacy_mode: cycle.privacyMode,
    deadline_at: tx.timeAt(cycle.deadlineMs),
    wake_at: tx.timeAt(cycle.wakeMs),
  }), reserve);
}

/**
 * `deadline_passed`: the sweeper's locked waiting rows → `failed` (`deadline_exceeded`), with notifications and capacity.
 * @throws {TransitionRaceError} when a locked row was no longer waiting.
 */
export async function failPastDeadline(tx: TxContext, ids: readonly string[]): Promise<void> {
  await move(tx, 'deadline_passed', { by: 'ids', ids }, () => ({ failure_code: FailureCode.deadlineExceeded }));
}

/** What one batch of expired leases became: the ids per new state. */
export interface ExpiredLeaseMoves {
  readonly retried: readonly string[];
  readonly failed: readonly string[];
  readonly cancelled: readonly string[];
}

/**
 * `lease_expired_*` — what happens when a lease expires. A worker that stops heartbeating (crashed, cut off, stuck)
 * leaves `lease_expires_at` in the past on the database clock; from then on every write it tries is refused (the lease
 * guard), and the next sweeper run selects the row (`selectExpiredLeases`: `running`, `lease_expires_at <= now`,
 * locked `SKIP LOCKED`) and hands it here. Each row moves as `outcomeOf` decides (`attemptOutcome` with kind
 * `lease_expired`): a cancel requested → `cancelled`; the final attempt → `failed` (`lease_expired`); otherwise →
 * `waiting_for_retry`, claimable and due a wake-up at once. One guarded UPDATE per outcome; the terminal ones write
 * their notification and release every capacity slot, the retried ones give back their route slot and keep their
 * admission slots — all in the sweeper's transaction. The trigger records the move with failure code `lease_expired`.
 * @throws {TransitionRaceError} when a locked row was no longer running.
 */
export async function expireLeases(tx: TxContext, rows: readonly ExpiredLeaseRow[], outcomeOf: (row: ExpiredLeaseRow) => AttemptOutcome): Promise<ExpiredLeaseMoves> {
  const decided = rows.map((row) => ({ id: row.id, outcome: outcomeOf(row) }));
  const idsOf = (status: OperationStatus) => decided.filter((d) => d.outcome.status === status).map((d) => d.id);
  const moves: ExpiredLeaseMoves = { cancelled: idsOf('cancelled'), failed: idsOf('failed'), retried: idsOf('waiting_for_retry') };
  // The owner's cancel ended it, not a failure: no failure of an earlier attempt stays on the row (as `acknowledge_cancel`).
  await move(tx, 'lease_expired_cancelled', { by: 'ids', ids: moves.cancelled }, () => ({ failure_code: null, failure_message: null }));
  await move(tx, 'lease_expired_final', { by: 'ids', ids: moves.failed }, () => failureColumns(FailureCode.leaseExpired, 'lease expired on the final attempt'));
  await move(tx, 'lease_expired_retry', { by: 'ids', ids: moves.retried }, (now) => ({ available_at: now, wake_at: now, failure_message: 'lease expired' }));
  return moves;
}
