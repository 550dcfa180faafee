import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Wake-up re-sends: only claimable rows carry wake_at. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_wake_idx').on('operations').columns(['wake_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_wake_idx', 'operations');
}
