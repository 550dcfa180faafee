import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Owner listing: newest first with a keyset cursor on (created_at, id). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_owner_list_idx').on('operations').columns(['owner_user_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_owner_list_idx', 'operations');
}
