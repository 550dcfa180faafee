import type { Insertable, Selectable, UpdateObject } from 'kysely';
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

/** Deletes the listed operations (their notifications must be deleted first). Returns rows deleted. */
export async function deleteOperations(ctx: TxContext, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await ctx.db.deleteFrom('operations').where('id', 'in', ids).where('finished_at', 'is not', null).executeTakeFirst();
  return Number(result.numDeletedRows);
}
