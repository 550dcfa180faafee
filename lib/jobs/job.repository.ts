import type { Insertable, Selectable } from 'kysely';
import type { DbContext, JobsTable, TxContext } from '../db/database.js';

/**
 * SQL for the `jobs` table: each function runs one statement and returns rows. Every query filters by
 * `owner_user_id` (docs/design.md §3): there is no way to read a job without naming its owner.
 */

/** A row of `jobs` as read. */
export type JobRow = Selectable<JobsTable>;

/** Columns of a new job that the service decides; `created_at` and `updated_at` come from the database clock here. */
export type NewJob = Omit<Insertable<JobsTable>, 'created_at' | 'updated_at'>;

/** Inserts a job; `created_at` = `updated_at` = the database clock. Throws the driver's error on a duplicate id. */
export async function insertJob(ctx: DbContext, row: NewJob): Promise<void> {
  const now = ctx.timeAt();
  await ctx.db
    .insertInto('jobs')
    .values({ ...row, created_at: now, updated_at: now })
    .execute();
}

/** The owner's job `id`, if it exists and is theirs (another owner's job is `undefined`, like a missing one). */
export async function findOwnedJob(ctx: DbContext, ownerUserId: string, id: string): Promise<JobRow | undefined> {
  return ctx.db.selectFrom('jobs').selectAll().where('id', '=', id).where('owner_user_id', '=', ownerUserId).executeTakeFirst();
}

/**
 * The owner's job `id`, locked until the caller's transaction ends, so writers that derive something from a job (AI
 * workspace notes) run one at a time per job. Pass `store.caps.rowLocks` as `rowLocks`: `SELECT … FOR UPDATE` on
 * MariaDB; a plain read on SQLite, whose transactions are already serial (see `Capabilities.rowLocks`).
 *
 * ```
 *   tx A: lockOwnedJob ─ upsertNote (insert) ─ commit
 *   tx B:      lockOwnedJob ··· waits ··········┴─ upsertNote (update) ─ commit
 * ```
 */
export async function lockOwnedJob(tx: TxContext, ownerUserId: string, id: string, rowLocks: boolean): Promise<JobRow | undefined> {
  const select = tx.db.selectFrom('jobs').selectAll().where('id', '=', id).where('owner_user_id', '=', ownerUserId);
  return (rowLocks ? select.forUpdate() : select).executeTakeFirst();
}
