import { MysqlAdapter, sql, type RawBuilder } from 'kysely';
import type { DbContext, TxContext } from '../db/database.js';
import { byPairKey } from '../db/key-order.js';

/**
 * SQL for `owner_capacity`, an owner's capacity of one task type as two guarded counters (docs/design.md §4): `active`
 * (its operations in an active state, bounded by the admission limit) and `running` (those running, bounded by the
 * running limit). The decisions are in `capacity.ts`. One row per (task type, owner) — not a pool of slot rows:
 * an owner's admissions are one person's clicks, so serialising them on one row lock costs nothing, and a million
 * owners cost a million small rows, not tens of millions.
 *
 * Lock order: a transaction that changes a counter does so before it writes the pair's turn (`owner_turns`), and
 * several counters in primary-key order — a claim too: it reads `running` without a lock and raises the counters of
 * the owners it took work from at its end, in key order, before its turn writes. So counters and turns never wait on
 * each other in a cycle.
 */

/** One (task type, owner) pair. */
export interface OwnerPair {
  readonly taskType: string;
  readonly ownerUserId: string;
}

function isMariadb(ctx: DbContext): boolean {
  return ctx.db.getExecutor().adapter instanceof MysqlAdapter;
}

/**
 * Adds one to the pair's `active` while it is below `limit`, in the caller's transaction (the row stays locked until it
 * ends): one guarded UPDATE by primary key. Returns false when the pair is at its limit, or has no row (rows are
 * created before the transaction, {@link ensureOwnerCapacityRows}, and never deleted by the code) — nothing written.
 */
export async function incrementActive(tx: TxContext, pair: OwnerPair, limit: number): Promise<boolean> {
  if (limit <= 0) return false;
  const result = await tx.db
    .updateTable('owner_capacity')
    .set((eb) => ({ active: eb('active', '+', 1) }))
    .where('task_type', '=', pair.taskType)
    .where('owner_user_id', '=', pair.ownerUserId)
    .where('active', '<', limit)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Whether the pair has its row (a primary-key lookup). */
export async function ownerCapacityRowExists(ctx: DbContext, pair: OwnerPair): Promise<boolean> {
  const row = await ctx.db.selectFrom('owner_capacity').select('active').where('task_type', '=', pair.taskType).where('owner_user_id', '=', pair.ownerUserId).executeTakeFirst();
  return row !== undefined;
}

/**
 * The pair's `running` as committed (a plain read: no lock, so a row another transaction holds — an admission, a
 * completion, another claimer of the same owner — is read, never skipped or waited for), or `missing` when the pair
 * has no row (operations admitted before it existed; the caller has it created, {@link ensureOwnerCapacityRows}). A
 * claim sizes its take from it and raises the counter at its end, guarded ({@link addRunningWithin}).
 */
export async function readRunning(ctx: DbContext, pair: OwnerPair): Promise<number | 'missing'> {
  const row = await ctx.db.selectFrom('owner_capacity').select('running').where('task_type', '=', pair.taskType).where('owner_user_id', '=', pair.ownerUserId).executeTakeFirst();
  return row ? Number(row.running) : 'missing';
}

/**
 * Adds `count` to the pair's `running` only while the result stays within `limit`, in the caller's transaction (one
 * guarded UPDATE by primary key: it waits for a row another transaction holds, then re-checks). Returns false when the
 * guard failed — another claimer took the owner's room since this claim read it — and nothing changed.
 */
export async function addRunningWithin(tx: TxContext, pair: OwnerPair, count: number, limit: number): Promise<boolean> {
  if (count <= 0) return true;
  const result = await tx.db
    .updateTable('owner_capacity')
    .set((eb) => ({ running: eb('running', '+', count) }))
    .where('task_type', '=', pair.taskType)
    .where('owner_user_id', '=', pair.ownerUserId)
    .where('running', '<=', limit - count)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Takes the listed operations off their pairs' counters in the caller's transaction: `active` (when `active` is true:
 * they left the active states) and `running` (when `running` is true: they left `running`), each by the number of
 * listed operations of the pair, never below zero (a drifted row; the sweeper reconciles it). One read of the
 * operations' pairs, then one update per pair in primary-key order.
 */
export async function decrementCounters(tx: TxContext, operationIds: readonly string[], counters: { readonly active: boolean; readonly running: boolean }): Promise<void> {
  if (operationIds.length === 0 || (!counters.active && !counters.running)) return;
  const pairs = await tx.db
    .selectFrom('operations')
    .select(['task_type', 'owner_user_id', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('id', 'in', operationIds)
    .groupBy(['task_type', 'owner_user_id'])
    .execute();
  const less = (column: 'active' | 'running', n: number) => sql<number>`CASE WHEN ${sql.ref(column)} > ${n} THEN ${sql.ref(column)} - ${n} ELSE 0 END`;
  const ordered = pairs.map((pair) => ({ taskType: pair.task_type, ownerUserId: pair.owner_user_id, n: Number(pair.n) })).sort(byPairKey);
  for (const { taskType, ownerUserId, n } of ordered) {
    await tx.db
      .updateTable('owner_capacity')
      .set({ ...(counters.active ? { active: less('active', n) } : {}), ...(counters.running ? { running: less('running', n) } : {}) })
      .where('task_type', '=', taskType)
      .where('owner_user_id', '=', ownerUserId)
      .execute();
  }
}

/**
 * What a pair's operations say its counters must be, as two scalar subqueries over `operations` (alias `o`, correlated
 * to `pair`'s columns): `running` — its rows in `running` (MariaDB reads `operations_expiry_idx`, the running rows
 * only: as many as run at once); `active` — those plus its claimable rows (one range of `operations_owner_claim_idx`
 * per lane). Never the owner's history.
 */
function truthOf(ctx: DbContext, pair: { readonly taskType: RawBuilder<string> | string; readonly ownerUserId: RawBuilder<string> | string }) {
  const expiry = isMariadb(ctx) ? sql`operations o FORCE INDEX (operations_expiry_idx)` : sql`operations o`;
  const claim = isMariadb(ctx) ? sql`operations o FORCE INDEX (operations_owner_claim_idx)` : sql`operations o`;
  const running = sql<number>`(SELECT COUNT(*) FROM ${expiry} WHERE o.status = 'running' AND o.task_type = ${pair.taskType} AND o.owner_user_id = ${pair.ownerUserId})`;
  const claimable = sql<number>`(SELECT COUNT(*) FROM ${claim} WHERE o.claim_lane IN ('L', 'X') AND o.task_type = ${pair.taskType} AND o.owner_user_id = ${pair.ownerUserId})`;
  return { active: sql<number>`(${claimable} + ${running})`, running };
}

/**
 * Creates the rows of pairs that have none, their counters counted from their operations (so operations admitted
 * before the row existed count), with `INSERT IGNORE` / `INSERT OR IGNORE`: a row a concurrent creator made first is
 * kept. Runs outside the reserving transaction (its own statement), before an admission's first reservation and after
 * a claim that found a pair without its row.
 */
export async function ensureOwnerCapacityRows(ctx: DbContext, pairs: readonly OwnerPair[]): Promise<void> {
  for (const pair of pairs) {
    const truth = truthOf(ctx, pair);
    const insert = sql`INTO owner_capacity (task_type, owner_user_id, active, running) SELECT ${pair.taskType}, ${pair.ownerUserId}, ${truth.active}, ${truth.running}`;
    await (isMariadb(ctx) ? sql`INSERT IGNORE ${insert}` : sql`INSERT OR IGNORE ${insert}`).execute(ctx.db);
  }
}

/** A counter row as the sweeper and the capacity view read it. */
export interface OwnerCapacityRow extends OwnerPair {
  readonly active: number;
  readonly running: number;
}

function rowOf(row: { task_type: string; owner_user_id: string; active: number | string; running: number | string }): OwnerCapacityRow {
  return { taskType: row.task_type, ownerUserId: row.owner_user_id, active: Number(row.active), running: Number(row.running) };
}

/**
 * Up to `limit` rows whose counters differ from their operations (a leak: a bug, a manual edit, a release that did not
 * count): a read of the rows holding something — `active > 0` (`owner_capacity_active_idx`), and `running > 0` with
 * `active` 0 (`owner_capacity_running_idx`; never true of a row that counts right) — each compared with its truth
 * ({@link truthOf}). Its cost follows the pairs holding capacity and their active operations, not the owners.
 */
export async function selectDriftedRows(ctx: DbContext, limit: number): Promise<OwnerCapacityRow[]> {
  const truth = truthOf(ctx, { taskType: sql.ref('c.task_type'), ownerUserId: sql.ref('c.owner_user_id') });
  const drifted = sql<boolean>`(c.active <> ${truth.active} OR c.running <> ${truth.running})`;
  const read = (index: string, holding: RawBuilder<boolean>) => {
    const from = isMariadb(ctx) ? sql`owner_capacity c FORCE INDEX (${sql.raw(index)})` : sql`owner_capacity c`;
    return sql<{ task_type: string; owner_user_id: string; active: number | string; running: number | string }>`
      SELECT c.task_type, c.owner_user_id, c.active, c.running FROM ${from} WHERE ${holding} AND ${drifted} LIMIT ${limit}`.execute(ctx.db);
  };
  const active = (await read('owner_capacity_active_idx', sql<boolean>`c.active > 0`)).rows;
  if (active.length >= limit) return active.map(rowOf);
  const running = (await read('owner_capacity_running_idx', sql<boolean>`c.running > 0 AND c.active = 0`)).rows;
  return [...active, ...running].slice(0, limit).map(rowOf);
}

/**
 * Sets the pair's counters to what its operations say, in the caller's transaction, the row locked first (`FOR UPDATE
 * SKIP LOCKED` on MariaDB: a row in use is left for the next sweep). Every transaction that changes a pair's active or
 * running operations changes its counters too, after its status writes, and holds the row until it commits — so
 * under the lock the committed operations are exactly what the counters must count. Returns true when it changed them.
 */
export async function reconcileRow(tx: TxContext, pair: OwnerPair, skipLocked: boolean): Promise<boolean> {
  const select = tx.db.selectFrom('owner_capacity').select(['active', 'running']).where('task_type', '=', pair.taskType).where('owner_user_id', '=', pair.ownerUserId);
  const locked = await (skipLocked ? select.forUpdate().skipLocked() : select).executeTakeFirst();
  if (!locked) return false;
  const truth = truthOf(tx, pair);
  const { rows } = await sql<{ active: number | string; running: number | string }>`SELECT ${truth.active} AS active, ${truth.running} AS running`.execute(tx.db);
  const active = Number(rows[0]?.active ?? 0);
  const running = Number(rows[0]?.running ?? 0);
  if (Number(locked.active) === active && Number(locked.running) === running) return false;
  await tx.db.updateTable('owner_capacity').set({ active, running }).where('task_type', '=', pair.taskType).where('owner_user_id', '=', pair.ownerUserId).execute();
  return true;
}

/**
 * The `limit` rows with the most `column` (ties by key), rows at zero left out: one descending range of the
 * counter's index.
 */
export async function mostHeld(ctx: DbContext, column: 'active' | 'running', limit: number): Promise<OwnerCapacityRow[]> {
  const rows = await ctx.db
    .selectFrom('owner_capacity')
    .select(['task_type', 'owner_user_id', 'active', 'running'])
    .where(column, '>', 0)
    .orderBy(column, 'desc')
    .orderBy('task_type')
    .orderBy('owner_user_id')
    .limit(limit)
    .execute();
  return rows.map(rowOf);
}

/** Running attempts per task type summed over every owner, and the owners running any, the most first (ties by type). */
export async function runningByTaskType(ctx: DbContext, limit: number): Promise<{ taskType: string; running: number; owners: number }[]> {
  const total = sql<number | string>`SUM(running)`;
  const rows = await ctx.db
    .selectFrom('owner_capacity')
    .select(['task_type', total.as('running'), (eb) => eb.fn.countAll<number | string>().as('owners')])
    .where('running', '>', 0)
    .groupBy('task_type')
    .orderBy(total, 'desc')
    .orderBy('task_type')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ taskType: row.task_type, running: Number(row.running), owners: Number(row.owners) }));
}
