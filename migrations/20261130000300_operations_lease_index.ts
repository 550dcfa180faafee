import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Lease expiry: only running rows hold a lease, so the sweeper's range scan touches only them. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_lease_idx').on('operations').columns(['lease_expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_lease_idx', 'operations');
}
