import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { columnTypes } from './column-types.js';

/**
 * `claim_lane`, a virtual column derived from `status`: `L` for the states a claim runs on the local (or only) route —
 * `queued`, `waiting_for_retry` — `X` for `waiting_for_external_fallback`, NULL otherwise. With the index of the next
 * migration, a claim reads claimable rows of one lane in claim order straight from the index: an `IN` over statuses
 * cannot use an index's order, so MariaDB sorted every claimable row per claim, and `FOR UPDATE SKIP LOCKED` with that
 * sort locked them all (`npm run bench` measured 127 claims/s with 16 claimers). Virtual: computed, never written by
 * the code.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('operations')
    .addColumn('claim_lane', t.char(1), (c) =>
      c.generatedAlwaysAs(
        sql`CASE WHEN status IN ('queued', 'waiting_for_retry') THEN 'L' WHEN status = 'waiting_for_external_fallback' THEN 'X' ELSE NULL END`,
      ),
    )
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('operations').dropColumn('claim_lane').execute();
}
