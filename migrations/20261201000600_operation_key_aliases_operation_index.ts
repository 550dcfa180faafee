import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The sweeper's purge deletes an operation's key aliases with it. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operation_key_aliases_operation_idx').on('operation_key_aliases').column('operation_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operation_key_aliases_operation_idx', 'operation_key_aliases');
}
