import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The sweep list, newest first, and the 7-day trim of the oldest runs. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sweeper_runs_finished_idx').on('sweeper_runs').columns(['finished_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'sweeper_runs_finished_idx', 'sweeper_runs');
}
