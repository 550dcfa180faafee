import type { ExpressionBuilder } from 'kysely';
import type { Database, DbContext, TxContext } from '../../db/database.js';
import { selectIndexRange, type LeaseKey, type NewOperation, type OperationChanges, type OperationRow } from '../store/operation.repository.js';
import type { OperationStatus } from './operation-status.js';

/**
 * Every INSERT and UPDATE of `operations` (the sweeper's purge deletes in `store/operation.repository.ts`), and so the
 * only SQL that writes `operations.status` (one statement per function, rows or a count back; the
 * decisions are in `transitions.ts`, which is the only caller of the status writes here). Also the lease rule, in one
 * place: a lease holds while the row is `running` with the same id, owner and token and `lease_expires_at` is later
 * than the database clock's now — every worker write is guarded by {@link leaseHolds}, and the sweeper's expiry pass
 * reads the complement ({@link selectExpiredLeases}).
 *
 * One guard lives in SQL: the `operation_events_on_update` trigger (migration `20261201001500`) records every change of
 * `status` or `attempt`, and names the end of a `running` attempt whose lease had already expired `lease_expired` —
 * the same rule as {@link selectExpiredLeases}, on the same clock (`test/operations/operation-events.test.ts`).
 */

/** Column changes that leave `status` as it is: heartbeats, progress, provenance, wake-up bookkeeping. */
export type NonStatusChanges = Omit<OperationChanges, 'status'>;

/** `(id, owner, token)` of any of the leases, `running`, not expired on the database clock: the lease holds. */
function leaseHolds(leases: readonly LeaseKey[], now: ReturnType<DbContext['timeAt']>) {
  return (eb: ExpressionBuilder<Database, 'operations'>) =>
    eb.and([
      eb.or(leases.map((lease) => eb.and([eb('id', '=', lease.operationId), eb('owner_user_id', '=', lease.ownerUserId), eb('lease_token', '=', lease.leaseToken)]))),
      eb('status', '=', 'running'),
      eb('lease_expires_at', '>', now),
    ]);
}

/**
 * The times of a new `queued` row, each in **ms after the database clock's now** (the statement's own, `timeAt`):
 * `available_at` (0 for at once; later for a delayed operation, which no claim takes before it), `deadline_at` (the
 * queued deadline, counted from `available_at` by the caller) and `wake_at` (when the sweeper re-sends its wake-up if
 * no worker took it).
 */
export interface QueuedTimes {
  readonly availableInMs: number;
  readonly deadlineInMs: number;
  readonly wakeInMs: number;
}

/**
 * Inserts a `queued` operation (the `admit` move) and returns it as stored (`INSERT … RETURNING *`: MariaDB ≥ 10.5 and
 * SQLite ≥ 3.35 both have it, so the database-clock times come back without a second read). Relies on the unique index
 * (owner, task type, key): a duplicate throws the driver's duplicate-key error, which the caller translates.
 *
 * Run through `executeQuery`, which hands back the driver's rows: kysely's MySQL adapter declares no `RETURNING`
 * (MySQL has none), so the builder's `execute()` would drop them.
 * @param times `available_at`, `deadline_at` and `wake_at` as ms from the database clock's now ({@link QueuedTimes}).
 * @throws {Error} when the database returned no row (it cannot, short of a driver fault).
 */
export async function insertQueued(ctx: TxContext, row: NewOperation, times: QueuedTimes): Promise<OperationRow> {
  const now = ctx.timeAt();
  const insert = ctx.db
    .insertInto('operations')
    .values({
      ...row,
      status: 'queued',
      attempt: 0,
      retry_count: 0,
      progress_percent: 0,
      created_at: now,
      updated_at: now,
      available_at: times.availableInMs === 0 ? now : ctx.timeAt(times.availableInMs),
      deadline_at: ctx.timeAt(times.deadlineInMs),
      wake_at: ctx.timeAt(times.wakeInMs),
    })
    .returningAll();
  const [inserted] = (await ctx.db.executeQuery(insert)).rows;
  if (!inserted) throw new Error(`INSERT … RETURNING of operation ${row.id} returned no row`);
  return inserted;
}

/** One locked candidate to move to `running`: the status it was selected in, its new token and lease length (ms). */
export interface ClaimMark {
  readonly id: string;
  readonly fromStatus: OperationStatus;
  readonly leaseToken: string;
  readonly leaseMs: number;
}

/**
 * Moves the candidates to `running`, each with its fresh lease, in one statement: attempt + 1, its lease token, lease
 * expiry its `leaseMs` after the database clock (per-row values by `CASE id`). Each row is guarded by the status it
 * was selected in. Returns the number of rows changed (`marks.length` when every guard held).
 */
export async function markClaimed(ctx: TxContext, marks: readonly ClaimMark[]): Promise<number> {
  if (marks.length === 0) return 0;
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('operations')
    .set((eb) => {
      const [first, ...rest] = marks as [ClaimMark, ...ClaimMark[]];
      let token = eb.case('id').when(first.id).then(first.leaseToken);
      let expiry = eb.case('id').when(first.id).then(ctx.timeAt(first.leaseMs));
      for (const mark of rest) {
        token = token.when(mark.id).then(mark.leaseToken);
        expiry = expiry.when(mark.id).then(ctx.timeAt(mark.leaseMs));
      }
      return {
        status: 'running',
        attempt: eb('attempt', '+', 1),
        lease_token: token.end(),
        lease_expires_at: expiry.end(),
        heartbeat_at: now,
        started_at: eb.fn.coalesce('started_at', now),
        progress_percent: 0,
        progress_stage: null,
        available_at: null,
        wake_at: null,
        updated_at: now,
      };
    })
    .where((eb) => eb.or(marks.map((mark) => eb.and([eb('id', '=', mark.id), eb('status', '=', mark.fromStatus)]))))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Which rows a guarded status UPDATE may change, besides `status IN from`:
 * - `lease`: rows whose lease holds ({@link leaseHolds}); with `cancel`, only those where the owner's cancel is
 *   (`requested`) or is not (`not_requested`) recorded — the statement itself decides, so a cancel committed a moment
 *   earlier is never missed.
 * - `owner`: the owner's row `id`; with `retryCount`, only while `retry_count` still has that value (a decision made on
 *   a stale read never applies); with `cancel`, as for `lease` (the first of two racing cancel requests is the one kept).
 * - `ids`: the listed rows (the sweeper's, which it has locked).
 */
export type StatusTarget =
  | { readonly by: 'lease'; readonly leases: readonly LeaseKey[]; readonly cancel?: 'requested' | 'not_requested' }
  | { readonly by: 'owner'; readonly ownerUserId: string; readonly id: string; readonly retryCount?: number; readonly cancel?: 'requested' | 'not_requested' }
  | { readonly by: 'ids'; readonly ids: readonly string[] };

/** How many rows a {@link StatusTarget} names: the count a fully applied move changes. */
export function targetSize(target: StatusTarget): number {
  return target.by === 'lease' ? target.leases.length : target.by === 'ids' ? target.ids.length : 1;
}

/**
 * `UPDATE operations SET status = to, …changes, updated_at = now WHERE status IN from AND <target>`: one guarded
 * statement. Returns the number of rows changed (0 when the guard did not hold; the caller checks it).
 */
export async function updateStatus(
  ctx: TxContext,
  from: readonly OperationStatus[],
  to: OperationStatus,
  target: StatusTarget,
  changes: (now: ReturnType<DbContext['timeAt']>) => NonStatusChanges,
): Promise<number> {
  if (from.length === 0 || targetSize(target) === 0) return 0;
  const now = ctx.timeAt();
  let update = ctx.db
    .updateTable('operations')
    .set({ ...changes(now), status: to, updated_at: now })
    .where('status', 'in', from);
  if (target.by === 'lease') {
    update = update.where(leaseHolds(target.leases, now));
  } else if (target.by === 'owner') {
    update = update.where('id', '=', target.id).where('owner_user_id', '=', target.ownerUserId);
    if (target.retryCount !== undefined) update = update.where('retry_count', '=', target.retryCount);
  } else {
    update = update.where('id', 'in', target.ids);
  }
  const cancel = target.by === 'ids' ? undefined : target.cancel;
  if (cancel === 'requested') update = update.where('cancel_requested_at', 'is not', null);
  if (cancel === 'not_requested') update = update.where('cancel_requested_at', 'is', null);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Applies `changes` (never `status`) only while the lease holds ({@link leaseHolds}): heartbeats, progress and
 * provenance. Returns the number of rows changed; 0 means the lease is lost and nothing changed.
 */
export async function updateUnderLease(ctx: DbContext, lease: LeaseKey, changes: (now: ReturnType<DbContext['timeAt']>) => NonStatusChanges): Promise<number> {
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('operations')
    .set({ ...changes(now), updated_at: now })
    .where(leaseHolds([lease], now))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Of the listed leases, the operations whose lease still holds ({@link leaseHolds}), locked `FOR UPDATE SKIP LOCKED` on
 * MariaDB: a row another transaction holds is left out rather than waited for. Returns their ids.
 */
export async function lockLiveLeases(ctx: TxContext, leases: readonly LeaseKey[], skipLocked: boolean): Promise<string[]> {
  if (leases.length === 0) return [];
  const select = ctx.db.selectFrom('operations').select('id').where(leaseHolds(leases, ctx.timeAt()));
  return (await (skipLocked ? select.forUpdate().skipLocked() : select).execute()).map((row) => row.id);
}

/** Columns the sweeper needs to decide what an expired lease becomes. */
export type ExpiredLeaseRow = Pick<OperationRow, 'id' | 'attempt' | 'max_attempts' | 'cancel_requested_at'>;

/**
 * Up to `limit` running operations whose lease expired on the database clock (`lease_expires_at <= now`: the
 * complement of {@link leaseHolds}), oldest expiry first, locked `FOR UPDATE SKIP LOCKED` on MariaDB. One range of
 * `operations_expiry_idx` (status, lease_expires_at) read in its order ({@link selectIndexRange}), so a batch reads, and locks, about
 * `limit` entries however many leases have expired (docs/design.md §6).
 */
export async function selectExpiredLeases(ctx: TxContext, limit: number, skipLocked: boolean): Promise<ExpiredLeaseRow[]> {
  const columns = ['id', 'attempt', 'max_attempts', 'cancel_requested_at'] as const;
  const range = { index: 'operations_expiry_idx', columns, status: 'running', along: 'lease_expires_at', upTo: ctx.timeAt(), limit } as const;
  return selectIndexRange<ExpiredLeaseRow>(ctx, range, skipLocked);
}

/**
 * Sets `wake_at` to `resendMs` after the database clock on the listed operations that are still in one of
 * `fromStatuses` (wake-up bookkeeping: the status stays). Returns rows changed; the sweeper locked the rows first, so
 * anything less than `ids.length` means the guard caught a race.
 */
export async function pushWakeAt(ctx: TxContext, ids: readonly string[], fromStatuses: readonly OperationStatus[], resendMs: number): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await ctx.db
    .updateTable('operations')
    .set({ wake_at: ctx.timeAt(resendMs), updated_at: ctx.timeAt() })
    .where('id', 'in', ids)
    .where('status', 'in', fromStatuses)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** What {@link readLeaseEnd} reads: the owner's cancel request, the lease end and the database clock, in one row. */
export interface LeaseEndRow {
  readonly cancel_requested_at: string | null;
  readonly lease_expires_at: string | null;
  /** The database clock's now when the row was read. */
  readonly db_now: string;
}

/**
 * The lease end of the owner's operation as the database computed it, with the database clock's now read in the same
 * statement (so the caller can tell how long the lease has left without comparing two clocks), and the owner's cancel
 * request. Undefined when the row is not there or not that owner's.
 */
export async function readLeaseEnd(ctx: DbContext, lease: LeaseKey): Promise<LeaseEndRow | undefined> {
  return ctx.db
    .selectFrom('operations')
    .select(['cancel_requested_at', 'lease_expires_at', ctx.timeAt().as('db_now')])
    .where('id', '=', lease.operationId)
    .where('owner_user_id', '=', lease.ownerUserId)
    .executeTakeFirst();
}
