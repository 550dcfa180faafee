import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The sweeper reads due wake-ups from `operations_wakeup_idx` now; `wake_at` alone was read by nothing else. */
export async function up(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_wake_idx', 'operations');
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_wake_idx').on('operations').columns(['wake_at']).execute();
}
