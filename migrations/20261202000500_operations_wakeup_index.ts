import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Due wake-ups, one claimable status at a time: `status = ? AND wake_at <= now ORDER BY wake_at` is one range of this
 * index, read in order, stopping at the batch. With only `wake_at` indexed, SQLite read the claimable rows through a
 * status index and sorted them all (`USE TEMP B-TREE FOR ORDER BY`), and MariaDB's choice between the two depended on
 * its estimates.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_wakeup_idx').on('operations').columns(['status', 'wake_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_wakeup_idx', 'operations');
}
