import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Owner notifications, newest first. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operation_notifications_owner_idx').on('operation_notifications').columns(['owner_user_id', 'created_at', 'operation_id', 'cycle']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operation_notifications_owner_idx', 'operation_notifications');
}
