import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * The operator's listing across owners (`durable-ops list`, newest first with a keyset cursor on (created_at, id)): an
 * index read instead of a full scan and sort. `created_at` never changes, so state transitions never update this index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_created_idx').on('operations').columns(['created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_created_idx', 'operations');
}
