import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Deadlines: the sweeper fails queued/waiting rows whose deadline passed. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_deadline_idx').on('operations').columns(['status', 'deadline_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_deadline_idx', 'operations');
}
