import { sql } from 'kysely';
import type { DbContext } from './database.js';

/**
 * The database clock now (plus the store's test clock offset, docs/design.md §3), as a stored timestamp string
 * (`YYYY-MM-DD HH:MM:SS.fraction`, UTC): for reads that must line up with what the database wrote (e.g. minute buckets).
 */
export async function databaseNow(ctx: DbContext): Promise<string> {
  const result = await sql<{ now: string }>`select ${ctx.timeAt()} as now`.execute(ctx.db);
  const now = result.rows[0]?.now;
  if (now === undefined) throw new Error('The database returned no time.');
  return now;
}
