import { sql, type CompiledQuery, type Insertable, type RawBuilder, type Selectable, type UpdateObject } from 'kysely';
import type { Database, DbContext, OperationsTable, TxContext } from '../../db/database.js';
import { ACTIVE_STATUSES, CLAIMABLE_STATUSES, WAITING_STATUSES, type OperationStatus } from '../lifecycle/operation-status.js';

/**
 * SQL for the `operations` table: each function runs one statement and returns rows or a row
 * count. Decisions (which state, which delay) belong to the services that call these. Reads, and the purge's delete,
 * only: every INSERT and UPDATE of `operations` is in `lifecycle/lifecycle.repository.ts`.
 */

/** A row of `operations` as read. */
export type OperationRow = Selectable<OperationsTable>;

/** Column changes of an UPDATE: values or SQL expressions (e.g. `timeAt(ms)`). */
export type OperationChanges = UpdateObject<Database, 'operations'>;

/** The identity of a held lease: the only key under which a worker may write (docs/design.md §3). */
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

/** The operation with this idempotency key for this owner and task type, if any; `latest`: see {@link LATEST_COMMITTED}. */
export async function findByIdempotencyKey(ctx: DbContext, ownerUserId: string, taskType: string, key: string, latest = false): Promise<OperationRow | undefined> {
  return ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('owner_user_id', '=', ownerUserId)
    .where('task_type', '=', taskType)
    .where('idempotency_key', '=', key)
    .$if(latest, (select) => select.modifyEnd(LATEST_COMMITTED))
    .executeTakeFirst();
}

/**
 * With `latest` (MariaDB only), a read ends `LOCK IN SHARE MODE`: it reads the latest committed row, not the snapshot a
 * REPEATABLE READ transaction took at its first read — so a replay inside a caller's transaction sees the row whose
 * duplicate key its insert just hit (a shared lock on that one row, held until the caller's transaction ends).
 */
const LATEST_COMMITTED = sql`LOCK IN SHARE MODE`;

/** The owner's operation `id`, if it exists and is theirs; `latest` as {@link findByIdempotencyKey}. */
export async function findOwnedOperation(ctx: DbContext, ownerUserId: string, id: string, latest = false): Promise<OperationRow | undefined> {
  return ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('id', '=', id)
    .where('owner_user_id', '=', ownerUserId)
    .$if(latest, (select) => select.modifyEnd(LATEST_COMMITTED))
    .executeTakeFirst();
}

/** What {@link findLeaseStates} reads of an operation: enough to tell whether a lease still holds it. */
export type LeaseStateRow = Pick<OperationRow, 'id' | 'owner_user_id' | 'status' | 'lease_token' | 'cancel_requested_at'>;

/**
 * The lease state of several operations, each looked up by id **and** its owner (docs/design.md §3: every query of an owner
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

/** The owner's newest active operation of `taskType` on one subject, if any (docs/design.md §2: producers reuse active work). */
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
 * position: the operator's listing (docs/design.md §8 ops surface), never an owner's.
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

/** One operation by id, whoever owns it: the operator's view only (docs/design.md §8 ops surface). */
export async function findOperationById(ctx: DbContext, id: string): Promise<OperationRow | undefined> {
  return ctx.db.selectFrom('operations').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * One range a claim reads: a claim lane (the virtual column `claim_lane`: `L` = `queued`/`waiting_for_retry`, `X` =
 * `waiting_for_external_fallback`), one task type the claimer runs in it, and one owner.
 */
export interface ClaimGroup {
  readonly lane: 'L' | 'X';
  readonly taskType: string;
  readonly ownerUserId: string;
}

/**
 * Up to `limit` claimable rows of one owner, task type and claim lane that are due (`available_at <= now`) and inside
 * their deadline, best first: highest priority, then oldest `available_at` — one range of `operations_owner_claim_idx`
 * (claim_lane, task_type, owner_user_id, priority desc, available_at) in that order, locked `FOR UPDATE SKIP LOCKED`
 * on MariaDB so concurrent claimers take different rows and never wait. It reads the owner's own entries only: another
 * owner's backlog is never read, however long (docs/design.md §4, fair share). Within the range it passes over rows
 * not yet due (a later `available_at` of a higher priority) and rows past their deadline that the sweeper has not
 * failed yet.
 */
export async function selectClaimCandidates(ctx: TxContext, group: ClaimGroup, skipLocked: boolean, limit: number): Promise<OperationRow[]> {
  return claimCandidateQuery(ctx, group, skipLocked, limit).execute();
}

/**
 * Whether the owner has a claimable operation of the task type that is due now, in either claim lane: one
 * {@link claimCandidateQuery} of one row per lane (a range of `operations_owner_claim_idx`; on MariaDB with `SKIP
 * LOCKED`, outside any transaction, so a row a claimer holds — it is being taken — does not count, and no lock
 * outlives the statement).
 */
export async function hasDueOperation(ctx: DbContext, taskType: string, ownerUserId: string, skipLocked: boolean): Promise<boolean> {
  for (const lane of ['L', 'X'] as const) {
    if ((await claimCandidateQuery(ctx, { lane, taskType, ownerUserId }, skipLocked, 1).execute()).length > 0) return true;
  }
  return false;
}

/** A statement that can be compiled (to `EXPLAIN` it) or run. */
export interface CandidateQuery {
  compile(): CompiledQuery;
  execute(): Promise<OperationRow[]>;
}

/**
 * The query of {@link selectClaimCandidates} (the best `limit` rows, default 1), unexecuted (tests and the bench
 * `EXPLAIN` it to prove it reads `operations_owner_claim_idx` in claim order). MariaDB's names the index
 * (`FORCE INDEX`): the claim indexes of the previous release stay one more release (rolling back stays safe), and left
 * to itself the optimizer picked `operations_claim_lane_idx` for an owner with a large backlog — a walk through every
 * owner's rows of the lane.
 */
export function claimCandidateQuery(ctx: DbContext, group: ClaimGroup, skipLocked: boolean, limit = 1): CandidateQuery {
  const now = ctx.timeAt();
  if (skipLocked) {
    const rows = sql<OperationRow>`SELECT * FROM operations FORCE INDEX (operations_owner_claim_idx)
        WHERE claim_lane = ${group.lane} AND task_type = ${group.taskType} AND owner_user_id = ${group.ownerUserId}
          AND available_at <= ${now} AND deadline_at > ${now}
        ORDER BY priority DESC, available_at ASC LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
    return { compile: () => rows.compile(ctx.db), execute: async () => (await rows.execute(ctx.db)).rows };
  }
  const select = ctx.db
    .selectFrom('operations')
    .selectAll()
    .where('claim_lane', '=', group.lane)
    .where('task_type', '=', group.taskType)
    .where('owner_user_id', '=', group.ownerUserId)
    .where('available_at', '<=', now)
    .where('deadline_at', '>', now)
    .orderBy('priority', 'desc')
    .orderBy('available_at', 'asc')
    .limit(limit);
  return { compile: () => select.compile(), execute: () => select.execute() };
}

/**
 * Runs one ordered, `LIMIT`ed read per status, in `statuses` order, sharing one budget of `limit` rows: the first asks
 * for `limit`, each next one for what is still missing, and a status is not read at all once the budget is spent. Each
 * read is one range of a `(status, <time>)` index in its own order, so together they read at most `limit` entries plus
 * one per status whose range ends early (and the entries another transaction holds, which `SKIP LOCKED` steps over
 * without locking), and lock only the rows they return.
 */
/** One range of an `operations` index that a sweeper batch reads, in the index's order (see {@link selectIndexRange}). */
export interface IndexRange {
  /** The index, whose columns are `status` (when `status` is given) and then `along`. */
  readonly index: 'operations_deadline_idx' | 'operations_wakeup_idx' | 'operations_expiry_idx' | 'operations_retention_idx';
  /** Columns returned. */
  readonly columns: readonly (keyof OperationsTable & string)[];
  /** The status the range is in, when the index leads with `status`. */
  readonly status?: OperationStatus;
  /** The time column the range runs along, ascending, up to `upTo` (inclusive). */
  readonly along: 'deadline_at' | 'wake_at' | 'lease_expires_at' | 'finished_at';
  /** The range's end: a database-clock time (`timeAt`). */
  readonly upTo: RawBuilder<string>;
  /** At most this many rows. */
  readonly limit: number;
}

/**
 * `SELECT columns FROM operations WHERE [status = ? AND] along <= upTo ORDER BY along LIMIT limit`: the read of every
 * sweeper batch. With `skipLocked` (MariaDB) it locks `FOR UPDATE SKIP LOCKED` and names the index (`FORCE INDEX`),
 * so a batch reads, and locks, about `limit` entries (docs/design.md §6). The sweeper's indexes all lead with
 * `status`; when every row of a status is in range (every running lease expired, after an outage), each of them costs
 * the optimizer the same `ref` on that status, and under load it read the expired leases through
 * `operations_deadline_idx` — every running row read, sorted (`Using filesort`) and locked for a batch of 200
 * (`test/operations/sweeper-backlog.test.ts`).
 */
export async function selectIndexRange<R>(ctx: TxContext, range: IndexRange, skipLocked: boolean): Promise<R[]> {
  const from = skipLocked ? sql`operations FORCE INDEX (${sql.raw(range.index)})` : sql`operations`;
  const status = range.status === undefined ? sql`` : sql`status = ${range.status} AND `;
  const lock = skipLocked ? sql` FOR UPDATE SKIP LOCKED` : sql``;
  const columns = sql.join(range.columns.map((column) => sql.ref(column)));
  const along = sql.ref(range.along);
  const query = sql<R>`SELECT ${columns} FROM ${from} WHERE ${status}${along} <= ${range.upTo} ORDER BY ${along} LIMIT ${range.limit}${lock}`;
  return (await query.execute(ctx.db)).rows;
}

async function idsByStatus(statuses: readonly OperationStatus[], limit: number, read: (status: OperationStatus, limit: number) => Promise<{ id: string }[]>): Promise<string[]> {
  const ids: string[] = [];
  for (const status of statuses) {
    if (ids.length >= limit) break;
    ids.push(...(await read(status, limit - ids.length)).map((r) => r.id));
  }
  return ids;
}

/**
 * Up to `limit` waiting operations (`queued`, `waiting_for_retry`, `waiting_for_external_fallback`) whose deadline has
 * passed on the database clock, locked `FOR UPDATE SKIP LOCKED` on MariaDB. Returns their ids status by status in
 * {@link WAITING_STATUSES} order, oldest deadline first within each status.
 *
 * One statement per status, `status = ? AND deadline_at <= now ORDER BY deadline_at LIMIT k`: one range of
 * `operations_deadline_idx` (status, deadline_at) each, sharing the budget (`idsByStatus`), so a batch reads at most
 * `limit` + 3 index entries (besides those other sweepers hold) and locks only the rows it returns, which the caller fails
 * (docs/design.md §6: a batch is at most `SWEEP_BATCH_SIZE` rows and its cost follows the rows it acts on, not the
 * backlog). One statement over the three statuses cannot be read in `deadline_at` order from that index: MariaDB sorted
 * every past-deadline row (`Using filesort`) and, the read being a locking one, locked them all for a batch of `limit`,
 * so a concurrent sweeper found nothing to take.
 */
export async function selectPastDeadline(ctx: TxContext, limit: number, skipLocked: boolean): Promise<string[]> {
  return idsByStatus(WAITING_STATUSES, limit, (status, k) => {
    const range = { index: 'operations_deadline_idx', columns: ['id'], status, along: 'deadline_at', upTo: ctx.timeAt(), limit: k } as const;
    return selectIndexRange<{ id: string }>(ctx, range, skipLocked);
  });
}

/**
 * Up to `limit` claimable operations whose wake-up re-send is due (`wake_at <= now` on the database clock), locked
 * `FOR UPDATE SKIP LOCKED` on MariaDB. Returns their ids status by status in {@link CLAIMABLE_STATUSES} order, oldest
 * `wake_at` first within each status.
 *
 * One statement per status, `status = ? AND wake_at <= now ORDER BY wake_at LIMIT k`: one range of
 * `operations_wakeup_idx` (status, wake_at) each, sharing the budget (`idsByStatus`), so a batch reads at most
 * `limit` + 3 index entries (besides those other sweepers hold) and locks only the rows it returns (docs/design.md §6).
 * With `wake_at` alone indexed and `status IN (…)`, SQLite read the claimable rows through a status index and sorted
 * them all.
 */
export async function selectDueWakeups(ctx: TxContext, limit: number, skipLocked: boolean): Promise<string[]> {
  return idsByStatus(CLAIMABLE_STATUSES, limit, (status, k) => {
    const range = { index: 'operations_wakeup_idx', columns: ['id'], status, along: 'wake_at', upTo: ctx.timeAt(), limit: k } as const;
    return selectIndexRange<{ id: string }>(ctx, range, skipLocked);
  });
}

/**
 * Up to `limit` terminal operations finished more than `retentionMs` (milliseconds) before the database clock's now,
 * oldest first, locked `FOR UPDATE SKIP LOCKED` on MariaDB. One range of `operations_retention_idx` (finished_at)
 * read in its order (only terminal rows have a `finished_at`): about `limit` entries read, and only the rows returned
 * locked (docs/design.md §6).
 */
export async function selectPurgeable(ctx: TxContext, retentionMs: number, limit: number, skipLocked: boolean): Promise<string[]> {
  const range = { index: 'operations_retention_idx', columns: ['id'], along: 'finished_at', upTo: ctx.timeAt(-retentionMs), limit } as const;
  return (await selectIndexRange<{ id: string }>(ctx, range, skipLocked)).map((r) => r.id);
}

/** Deletes the listed operations (their notifications must be deleted first). Returns rows deleted. */
export async function deleteOperations(ctx: TxContext, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await ctx.db.deleteFrom('operations').where('id', 'in', ids).where('finished_at', 'is not', null).executeTakeFirst();
  return Number(result.numDeletedRows);
}
