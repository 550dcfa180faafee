import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Retention purge: terminal rows by age. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_retention_idx').on('operations').columns(['finished_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_retention_idx', 'operations');
}
