import type { ExpressionBuilder, Insertable, Selectable, UpdateObject } from 'kysely';
import type { Database, DbContext, OperationsTable, TxContext } from '../../db/database.js';
import { ACTIVE_STATUSES, CLAIMABLE_STATUSES, WAITING_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';

/**
 * SQL for the `operations` table (STYLE §2): each function runs one statement and returns rows or a row
 * count. Decisions (which state, which delay) belong to the services that call these.
 */

/** A row of `operations` as read. */
export type OperationRow = Selectable<OperationsTable>;

/** Column changes of an UPDATE: values or SQL expressions (e.g. `timeAt(ms)`). */
export type OperationChanges = UpdateObject<Database, 'operations'>;

/** The identity of a held lease: the only key under which a worker may write (DESIGN §3). */
export interface LeaseKey {
  readonly operationId: string;
  readonly ownerUserId: string;
  readonly leaseToken: string;
}

/** Columns of a new operation that the service decides; times are set here from the database clock. */
export type NewOperation = Omit<
  Insertable<OperationsTable>,
  | 'created_at'
  | 'updated_at'
  | 'deadline_at'
  | 'available_at'
  | 'wake_at'
  | 'status'
  | 'attempt'
  | 'retry_count'
  | 'progress_percent'
>;

/**
 * Inserts a queued operation and returns it as stored (`INSERT … RETURNING *`: MariaDB ≥ 10.5 and SQLite ≥ 3.35
 * both have it, so the database-clock times come back without a second read). Relies on the unique index (owner, task
 * type, key): a duplicate throws the driver's duplicate-key error, which the caller translates.
 *
 * Run through `executeQuery`, which hands back the driver's rows: kysely's MySQL adapter declares no `RETURNING`
 * (MySQL has none), so the builder's `execute()` would drop them.
 * @param deadlineMs how long it may wait to start, from the database clock, in ms.
 * @param wakeMs when the sweeper should re-send its wake-up if no worker took it, in ms from now.
 * @throws {Error} when the database returned no row (it cannot, short of a driver fault).
 */
export async function insertOperation(ctx: DbContext, row: NewOperation, deadlineMs: number, wakeMs: number): Promise<OperationRow> {
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
      available_at: now,
      deadline_at: ctx.timeAt(deadlineMs),
      wake_at: ctx.timeAt(wakeMs),
    })
    .returningAll();
  const [inserted] = (await ctx.db.executeQuery(insert)).rows;
  if (!inserted) throw new Error(`INSERT … RETURNING of operation ${row.id} returned no row`);
  return inserted;
}

/** The operation with this idempotency key for this owner and task type, if any. */
export async function findByIdempotencyKey(ctx: DbContext, ownerUserId: string, taskType: string, key: string): Promise<OperationRow | undefined> {
  return ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('owner_user_id', '=', ownerUserId)
    .where('task_type', '=', taskType)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

/** The owner's operation `id`, if it exists and is theirs. */
export async function findOwnedOperation(ctx: DbContext, ownerUserId: string, id: string): Promise<OperationRow | undefined> {
  return ctx.db.selectFrom('operations').selectAll().where('id', '=', id).where('owner_user_id', '=', ownerUserId).executeTakeFirst();
}

/** What {@link findLeaseStates} reads of an operation: enough to tell whether a lease still holds it. */
export type LeaseStateRow = Pick<OperationRow, 'id' | 'owner_user_id' | 'status' | 'lease_token' | 'cancel_requested_at'>;

/**
 * The lease state of several operations, each looked up by id **and** its owner (DESIGN §3: every query of an owner
 * scope filters by owner), in one statement. Operations that are not there, or not that owner's, are left out.
 */
export async function findLeaseStates(ctx: DbContext, keys: readonly { readonly id: string; readonly ownerUserId: string }[]): Promise<LeaseStateRow[]> {
  if (keys.length === 0) return [];
  return ctx.db
    .selectFrom('operations')
    .select(['id', 'owner_user_id', 'status', 'lease_token', 'cancel_requested_at'])
    .where((eb) => eb.or(keys.map((key) => eb.and([eb('id', '=', key.id), eb('owner_user_id', '=', key.ownerUserId)]))))
    .execute();
}

/** The owner's newest active operation of `taskType` on one subject, if any (DESIGN §7: producers reuse active work). */
export async function findActiveForSubject(
  ctx: DbContext,
  ownerUserId: string,
  taskType: string,
  subject: { readonly type: string; readonly id: string },
): Promise<OperationRow | undefined> {
  return ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('owner_user_id', '=', ownerUserId)
    .where('subject_type', '=', subject.type)
    .where('subject_id', '=', subject.id)
    .where('task_type', '=', taskType)
    .where('status', 'in', ACTIVE_STATUSES)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Keyset position in a newest-first listing. */
export interface ListPosition {
  readonly createdAt: string;
  readonly id: string;
}

/** Filters of {@link listOwnedOperations}. */
export interface OperationListQuery {
  readonly status?: OperationStatus | undefined;
  readonly taskType?: string | undefined;
  /** Rows to return (the caller asks for one more than it shows to learn whether a next page exists). */
  readonly limit: number;
  readonly after?: ListPosition | undefined;
}

/** The owner's operations, newest first (created_at, id descending), after the keyset position. */
export async function listOwnedOperations(ctx: DbContext, ownerUserId: string, query: OperationListQuery): Promise<OperationRow[]> {
  return listOperationsWhere(ctx, { ...query, ownerUserId });
}

/**
 * Operations of every owner (or of `ownerUserId` when given), newest first (created_at, id descending), after the keyset
 * position: the operator's listing (DESIGN §8 ops surface), never an owner's.
 */
export async function listOperationsWhere(ctx: DbContext, query: OperationListQuery & { readonly ownerUserId?: string | undefined }): Promise<OperationRow[]> {
  let select = ctx.db.selectFrom('operations').selectAll();
  if (query.ownerUserId !== undefined) select = select.where('owner_user_id', '=', query.ownerUserId);
  if (query.status) select = select.where('status', '=', query.status);
  if (query.taskType) select = select.where('task_type', '=', query.taskType);
  const after = query.after;
  if (after) {
    select = select.where((eb) =>
      eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
    );
  }
  return select.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
}

/** One operation by id, whoever owns it: the operator's view only (DESIGN §8 ops surface). */
export async function findOperationById(ctx: DbContext, id: string): Promise<OperationRow | undefined> {
  return ctx.db.selectFrom('operations').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * A claim lane (the virtual column `claim_lane`: `L` = `queued`/`waiting_for_retry`, `X` =
 * `waiting_for_external_fallback`) and the task types a claim may take in it.
 */
export interface ClaimGroup {
  readonly lane: 'L' | 'X';
  readonly taskTypes: readonly string[];
}

/**
 * Picks the best `limit` claimable operations of one lane: highest priority, then oldest `available_at`; never one
 * past its deadline. The order is that of `operations_claim_lane_idx` (lane, priority desc, available_at), so the read
 * stops after the first `limit` eligible rows; on MariaDB they are locked `FOR UPDATE SKIP LOCKED`, so concurrent
 * claimers take different rows instead of waiting on each other (and lock nothing else).
 */
export async function selectClaimCandidates(ctx: TxContext, group: ClaimGroup, skipLocked: boolean, limit: number): Promise<OperationRow[]> {
  return claimCandidateQuery(ctx, group, skipLocked, limit).execute();
}

/**
 * The query of {@link selectClaimCandidates} (the best `limit` rows, default 1), unexecuted (tests `EXPLAIN` it to
 * prove it reads the claim index in order).
 */
export function claimCandidateQuery(ctx: DbContext, group: ClaimGroup, skipLocked: boolean, limit = 1) {
  const now = ctx.timeAt();
  const select = ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('claim_lane', '=', group.lane)
    .where('task_type', 'in', group.taskTypes)
    .where('available_at', '<=', now)
    .where('deadline_at', '>', now)
    .orderBy('priority', 'desc')
    .orderBy('available_at', 'asc')
    .limit(limit);
  return skipLocked ? select.forUpdate().skipLocked() : select;
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
 * Applies `changes` only while the lease is live: same id, same owner, same token, still `running`, and the lease
 * not yet expired on the database clock (and, with `requireCancelRequested`, a cancel requested). Returns the number
 * of rows changed; 0 means the lease is lost and nothing changed.
 */
export async function updateUnderLease(
  ctx: DbContext,
  lease: LeaseKey,
  changes: (now: ReturnType<DbContext['timeAt']>) => OperationChanges,
  requireCancelRequested = false,
): Promise<number> {
  return updateManyUnderLease(ctx, [lease], changes, requireCancelRequested);
}

/** `(id, owner, token)` of any of the leases: the key a worker writes under (DESIGN §3), for one or many leases. */
function anyOfLeases(leases: readonly LeaseKey[]) {
  return (eb: ExpressionBuilder<Database, 'operations'>) =>
    eb.or(leases.map((lease) => eb.and([eb('id', '=', lease.operationId), eb('owner_user_id', '=', lease.ownerUserId), eb('lease_token', '=', lease.leaseToken)])));
}

/**
 * Of the listed leases, the operations whose lease still holds (same id, owner and token, `running`, not expired on the
 * database clock), locked `FOR UPDATE SKIP LOCKED` on MariaDB: a row another transaction holds is left out rather than
 * waited for. Returns their ids.
 */
export async function lockLiveLeases(ctx: TxContext, leases: readonly LeaseKey[], skipLocked: boolean): Promise<string[]> {
  if (leases.length === 0) return [];
  const now = ctx.timeAt();
  const select = ctx.db
    .selectFrom('operations')
    .select('id')
    .where(anyOfLeases(leases))
    .where('status', '=', 'running')
    .where('lease_expires_at', '>', now);
  return (await (skipLocked ? select.forUpdate().skipLocked() : select).execute()).map((row) => row.id);
}

/**
 * {@link updateUnderLease} for several leases in one statement: the same `changes` to every listed operation whose
 * lease is live, each guarded on its own id, owner and token. Returns rows changed: fewer than `leases.length` means
 * some lease was lost, and the count does not say which (the caller rolls back and goes one by one).
 */
export async function updateManyUnderLease(
  ctx: DbContext,
  leases: readonly LeaseKey[],
  changes: (now: ReturnType<DbContext['timeAt']>) => OperationChanges,
  requireCancelRequested = false,
): Promise<number> {
  if (leases.length === 0) return 0;
  const now = ctx.timeAt();
  let update = ctx.db
    .updateTable('operations')
    .set({ ...changes(now), updated_at: now })
    .where(anyOfLeases(leases))
    .where('status', '=', 'running')
    .where('lease_expires_at', '>', now);
  if (requireCancelRequested) update = update.where('cancel_requested_at', 'is not', null);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Applies `changes` to the owner's operation only if it is in one of `fromStatuses` (and, when given, still has
 * `retry_count = expectedRetryCount`, so a decision made on a stale read never applies). Returns rows changed (0 or 1).
 */
export async function updateOwnedInStatus(
  ctx: DbContext,
  ownerUserId: string,
  id: string,
  fromStatuses: readonly OperationStatus[],
  changes: (now: ReturnType<DbContext['timeAt']>) => OperationChanges,
  expectedRetryCount?: number,
): Promise<number> {
  const now = ctx.timeAt();
  let update = ctx.db
    .updateTable('operations')
    .set({ ...changes(now), updated_at: now })
    .where('id', '=', id)
    .where('owner_user_id', '=', ownerUserId)
    .where('status', 'in', fromStatuses);
  if (expectedRetryCount !== undefined) update = update.where('retry_count', '=', expectedRetryCount);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Columns the sweeper needs to decide what an expired lease becomes. */
export type ExpiredLeaseRow = Pick<OperationRow, 'id' | 'attempt' | 'max_attempts' | 'cancel_requested_at'>;

/** Running operations whose lease expired on the database clock, oldest expiry first, locked (SKIP LOCKED). */
export async function selectExpiredLeases(ctx: TxContext, limit: number, skipLocked: boolean): Promise<ExpiredLeaseRow[]> {
  const select = ctx.db
    .selectFrom('operations')
    .select(['id', 'attempt', 'max_attempts', 'cancel_requested_at'])
    .where('lease_expires_at', '<=', ctx.timeAt())
    .where('status', '=', 'running')
    .orderBy('lease_expires_at')
    .limit(limit);
  return (skipLocked ? select.forUpdate().skipLocked() : select).execute();
}

/** Queued/waiting operations past their deadline, locked (SKIP LOCKED). */
export async function selectPastDeadline(ctx: TxContext, limit: number, skipLocked: boolean): Promise<string[]> {
  const select = ctx.db
    .selectFrom('operations')
    .select('id')
    .where('status', 'in', WAITING_STATUSES)
    .where('deadline_at', '<=', ctx.timeAt())
    .orderBy('deadline_at')
    .limit(limit);
  return (await (skipLocked ? select.forUpdate().skipLocked() : select).execute()).map((r) => r.id);
}

/** Claimable operations whose wake-up re-send is due, locked (SKIP LOCKED). */
export async function selectDueWakeups(ctx: TxContext, limit: number, skipLocked: boolean): Promise<string[]> {
  const select = ctx.db
    .selectFrom('operations')
    .select('id')
    .where('wake_at', '<=', ctx.timeAt())
    .where('status', 'in', CLAIMABLE_STATUSES)
    .orderBy('wake_at')
    .limit(limit);
  return (await (skipLocked ? select.forUpdate().skipLocked() : select).execute()).map((r) => r.id);
}

/** Terminal operations finished more than `retentionMs` ago, locked (SKIP LOCKED). */
export async function selectPurgeable(ctx: TxContext, retentionMs: number, limit: number, skipLocked: boolean): Promise<string[]> {
  const select = ctx.db
    .selectFrom('operations')
    .select('id')
    .where('finished_at', '<=', ctx.timeAt(-retentionMs))
    .orderBy('finished_at')
    .limit(limit);
  return (await (skipLocked ? select.forUpdate().skipLocked() : select).execute()).map((r) => r.id);
}

/**
 * Applies `changes` to the listed operations that are still in one of `fromStatuses`. Returns rows changed; the
 * sweeper locked the rows first, so anything less than `ids.length` means the guard caught a race.
 */
export async function updateManyInStatus(
  ctx: TxContext,
  ids: readonly string[],
  fromStatuses: readonly OperationStatus[],
  changes: (now: ReturnType<DbContext['timeAt']>) => OperationChanges,
): Promise<number> {
  if (ids.length === 0) return 0;
  const now = ctx.timeAt();
  const result = await ctx.db
    .updateTable('operations')
    .set({ ...changes(now), updated_at: now })
    .where('id', 'in', ids)
    .where('status', 'in', fromStatuses)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Deletes the listed operations (their notifications must be deleted first). Returns rows deleted. */
export async function deleteOperations(ctx: TxContext, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await ctx.db.deleteFrom('operations').where('id', 'in', ids).where('finished_at', 'is not', null).executeTakeFirst();
  return Number(result.numDeletedRows);
}
