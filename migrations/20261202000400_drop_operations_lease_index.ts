import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The sweeper reads expired leases from `operations_expiry_idx` now; `lease_expires_at` alone was read by nothing else. */
export async function up(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_lease_idx', 'operations');
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_lease_idx').on('operations').columns(['lease_expires_at']).execute();
}
