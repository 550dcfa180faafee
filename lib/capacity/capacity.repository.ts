import { sql } from 'kysely';
import type { DbContext, TxContext } from '../db/database.js';
import { ACTIVE_STATUSES } from '../operations/lifecycle/operation-status.js';

/**
 * SQL for `capacity_slots`; the decisions are in `capacity.ts`. A pool is a fixed set of slot rows
 * `(pool_key, slot_no)`; a slot is free when `operation_id` is NULL. Why rows rather than one counter per pool: a
 * counter row would serialise every admission of a pool on one row lock; free slot rows taken with `SKIP LOCKED` let
 * concurrent admissions take different rows and never wait on each other, and a held slot names its holder. So the
 * pools everyone shares — global (per task type) and route — are slot rows; an owner's own capacity, where
 * contention is one person's clicks, is one counter row (`owner-capacity.repository.ts`).
 */

/** Prefix of execution (route) pools: their slots are held only while an attempt runs. */
export const ROUTE_POOL_PREFIX = 'route:';

/**
 * Prefix of the per-owner running pools (`running:<task type>:<owner>`) of the releases before `owner_capacity`: like
 * route pools, execution pools — their slots were held only while an attempt ran. This release writes none; rows an
 * earlier release holds during a rolling deploy are still given back (the same release) and reclaimed as leaked; the
 * capacity view keeps the prefix as the name of an owner's running counter.
 */
export const RUNNING_POOL_PREFIX = 'running:';

/** Prefixes of the execution pools, whose slots an attempt gives back when it leaves `running`. */
const EXECUTION_POOL_PREFIXES: readonly string[] = Object.freeze([ROUTE_POOL_PREFIX, RUNNING_POOL_PREFIX]);

/** Prefix of the per-task-type global admission pools (`global:<task type>`). */
export const GLOBAL_POOL_PREFIX = 'global:';

/**
 * Prefix of the per-owner admission pools (`owner:<task type>:<owner>`) of the releases before `owner_capacity`; the
 * capacity view keeps it as the name of an owner's active counter. Slot rows an earlier release holds are reclaimed as
 * leaked once their operation ends.
 */
export const OWNER_POOL_PREFIX = 'owner:';

/** Whether slot `slotNo` of the pool exists (a primary-key lookup). */
export async function slotExists(ctx: DbContext, poolKey: string, slotNo: number): Promise<boolean> {
  const row = await ctx.db.selectFrom('capacity_slots').select('slot_no').where('pool_key', '=', poolKey).where('slot_no', '=', slotNo).executeTakeFirst();
  return row !== undefined;
}

/** Creates slot rows `from … to − 1` of a pool, ignoring those that exist (`INSERT IGNORE` / `INSERT OR IGNORE`). */
export async function insertMissingSlots(ctx: DbContext, poolKey: string, from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += 500) {
    const values = Array.from({ length: Math.min(500, to - start) }, (_, i) => ({ pool_key: poolKey, slot_no: start + i, operation_id: null, reserved_at: null }));
    await ctx.db.insertInto('capacity_slots').orIgnore().values(values).execute();
  }
}

/**
 * The first `count` free slots of the pool numbered in `[from, below)` (default one) (callers keep `below` at most the pool's limit: slots at
 * or above a lowered limit are never handed out again), locked with `FOR UPDATE SKIP LOCKED` on MariaDB so concurrent
 * reservers take different slots.
 *
 * MariaDB reads it through the primary key (`FORCE INDEX (PRIMARY)`), whose rows `SKIP LOCKED` skips without waiting,
 * as a range on both key parts (pool, slot ≥ `from`), so the read starts at `from`; callers start at a random `from` so
 * the walk past held slots stays short. Left to itself the optimizer picked either a secondary index — through which
 * `SKIP LOCKED` still waits for locks (MySQL bug #111637: lock waits and deadlocks in concurrent claims) — or `ref` on
 * the pool key alone, which walks the pool from slot 0 (`npm run bench`: ≈1,000 rows read per reservation at
 * N = 20,000). The walk past held slots is the price: in a nearly full pool a reservation reads about half the pool,
 * and a full one (a 429) all of it. SQLite has neither `SKIP LOCKED` nor index hints and reads it the plain way (one
 * writer at a time).
 */
export async function selectFreeSlots(
  ctx: TxContext,
  poolKey: string,
  range: { readonly from: number; readonly below: number },
  skipLocked: boolean,
  count = 1,
): Promise<number[]> {
  if (skipLocked) {
    const { rows } = await sql<{ slot_no: number }>`SELECT slot_no FROM capacity_slots FORCE INDEX (PRIMARY)
      WHERE pool_key = ${poolKey} AND operation_id IS NULL AND slot_no >= ${range.from} AND slot_no < ${range.below}
      ORDER BY slot_no LIMIT ${count} FOR UPDATE SKIP LOCKED`.execute(ctx.db);
    return rows.map((row) => row.slot_no);
  }
  const select = ctx.db
    .selectFrom('capacity_slots')
    .select('slot_no')
    .where('pool_key', '=', poolKey)
    .where('operation_id', 'is', null)
    .where('slot_no', '>=', range.from)
    .where('slot_no', '<', range.below)
    .orderBy('slot_no')
    .limit(count);
  return (await select.execute()).map((row) => row.slot_no);
}

/** One slot of one pool. */
export interface SlotKey {
  readonly poolKey: string;
  readonly slotNo: number;
}

/**
 * Gives free slots to `operationId` in one statement, each guarded by still being free. Returns rows changed (the
 * number of slots when every guard held).
 */
export async function takeSlots(ctx: TxContext, slots: readonly SlotKey[], operationId: string): Promise<number> {
  if (slots.length === 0) return 0;
  const result = await ctx.db
    .updateTable('capacity_slots')
    .set({ operation_id: operationId, reserved_at: ctx.timeAt() })
    .where((eb) => eb.or(slots.map((slot) => eb.and([eb('pool_key', '=', slot.poolKey), eb('slot_no', '=', slot.slotNo)]))))
    .where('operation_id', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Frees every slot the listed operations hold, or with `executionOnly` only their execution (route and running) slots.
 * Returns rows freed.
 */
export async function releaseSlotsOf(ctx: TxContext, operationIds: readonly string[], executionOnly: boolean): Promise<number> {
  if (operationIds.length === 0) return 0;
  let update = ctx.db.updateTable('capacity_slots').set({ operation_id: null, reserved_at: null }).where('operation_id', 'in', operationIds);
  if (executionOnly) update = update.where((eb) => eb.or(EXECUTION_POOL_PREFIXES.map((prefix) => eb('pool_key', 'like', `${prefix}%`))));
  return Number((await update.executeTakeFirst()).numUpdatedRows);
}

/**
 * The condition "this held slot is leaked": its operation is gone or terminal, or it is an execution (route or
 * running) slot whose operation is no longer running.
 */
const leaked = sql<boolean>`not exists (
  select 1 from operations o
  where o.id = capacity_slots.operation_id
    and o.status in (${sql.join(ACTIVE_STATUSES)})
    and ((capacity_slots.pool_key not like ${`${ROUTE_POOL_PREFIX}%`} and capacity_slots.pool_key not like ${`${RUNNING_POOL_PREFIX}%`})
      or o.status = 'running'))`;

/** Holders of up to `limit` leaked slots (see {@link freeLeakedSlots}). */
export async function selectLeakedHolders(ctx: TxContext, limit: number): Promise<string[]> {
  const rows = await ctx.db
    .selectFrom('capacity_slots')
    .select('operation_id')
    .distinct()
    .where('operation_id', 'is not', null)
    .where(leaked)
    .limit(limit)
    .execute();
  return rows.map((r) => r.operation_id).filter((id): id is string => id !== null);
}

/** Frees the leaked slots of the listed holders, re-checking the leak condition in the same statement. Returns rows freed. */
export async function freeLeakedSlots(ctx: TxContext, holders: readonly string[]): Promise<number> {
  if (holders.length === 0) return 0;
  const result = await ctx.db
    .updateTable('capacity_slots')
    .set({ operation_id: null, reserved_at: null })
    .where('operation_id', 'in', holders)
    .where(leaked)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Slot rows and held slots of one pool, as {@link countPoolSlots} reads them. */
export interface PoolCount {
  readonly poolKey: string;
  /** Slot rows the pool has (its largest limit so far). */
  readonly slotRows: number;
  readonly held: number;
}

/** Slot rows and held slots of every pool whose key starts with `prefix` (a primary-key range), by key. */
export async function countPoolSlots(ctx: DbContext, prefix: string): Promise<PoolCount[]> {
  const rows = await ctx.db
    .selectFrom('capacity_slots')
    .select(['pool_key', (eb) => eb.fn.countAll<number | string>().as('slot_rows'), (eb) => eb.fn.count<number | string>('operation_id').as('held')])
    .where('pool_key', 'like', `${prefix}%`)
    .groupBy('pool_key')
    .orderBy('pool_key')
    .execute();
  return rows.map((row) => ({ poolKey: row.pool_key, slotRows: Number(row.slot_rows), held: Number(row.held) }));
}
