import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Feature producers find the owner's active operation for one subject (docs/design.md §2: reuse active work). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('operations_subject_idx')
    .on('operations')
    .columns(['owner_user_id', 'subject_type', 'subject_id', 'task_type'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_subject_idx', 'operations');
}
