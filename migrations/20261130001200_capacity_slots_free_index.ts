import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Free-slot lookup: a pool's free slots (operation_id NULL) in slot order. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('capacity_slots_free_idx').on('capacity_slots').columns(['pool_key', 'operation_id', 'slot_no']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'capacity_slots_free_idx', 'capacity_slots');
}
