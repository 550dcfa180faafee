import type { Selectable } from 'kysely';
import type { DbContext, SweeperRunsTable, TxContext } from '../db/database.js';

/** SQL for `sweeper_runs` (one row per sweeper run), one statement per function. */

/** A row of `sweeper_runs` as read. */
export type SweeperRunRow = Selectable<SweeperRunsTable>;

/** Inserts a run that finished now (database clock) after `durationMs` **milliseconds**, with its counts JSON. */
export async function insertSweeperRun(ctx: DbContext, durationMs: number, countsJson: string): Promise<void> {
  await ctx.db.insertInto('sweeper_runs').values({ started_at: ctx.timeAt(-durationMs), finished_at: ctx.timeAt(), counts: countsJson }).execute();
}

/** Ids of up to `limit` runs that finished more than `ageMs` **milliseconds** ago, oldest first. */
export async function selectSweeperRunsOlderThan(ctx: TxContext, ageMs: number, limit: number): Promise<number[]> {
  const rows = await ctx.db.selectFrom('sweeper_runs').select('id').where('finished_at', '<', ctx.timeAt(-ageMs)).orderBy('finished_at').limit(limit).execute();
  return rows.map((row) => row.id);
}

/** Deletes the listed runs. Returns rows deleted. */
export async function deleteSweeperRuns(ctx: TxContext, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await ctx.db.deleteFrom('sweeper_runs').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The latest `limit` runs, newest first (`sweeper_runs_finished_idx`). */
export async function listLatestSweeperRuns(ctx: DbContext, limit: number): Promise<SweeperRunRow[]> {
  return ctx.db.selectFrom('sweeper_runs').selectAll().orderBy('finished_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}
