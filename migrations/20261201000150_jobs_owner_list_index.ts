import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** An owner's jobs, newest first with a keyset cursor on (created_at, id), as the operations listing is indexed. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('jobs_owner_list_idx').on('jobs').columns(['owner_user_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'jobs_owner_list_idx', 'jobs');
}
