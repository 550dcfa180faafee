import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Expired leases in expiry order: `status = 'running' AND lease_expires_at <= now ORDER BY lease_expires_at` is one
 * range of this index, read in order, stopping at the batch. With only `lease_expires_at` indexed, MariaDB preferred
 * `operations_deadline_idx` (`status = 'running'`) and sorted every running row (`Using filesort`), reading — and, as
 * a locking read, locking — all expired leases for one batch.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_expiry_idx').on('operations').columns(['status', 'lease_expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_expiry_idx', 'operations');
}
