import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Release and reclaim: the slots an operation holds. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('capacity_slots_holder_idx').on('capacity_slots').columns(['operation_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'capacity_slots_holder_idx', 'capacity_slots');
}
