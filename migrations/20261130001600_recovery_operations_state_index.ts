import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Operator listing and takeover: recovery operations by state and lease expiry. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('recovery_operations_state_idx').on('recovery_operations').columns(['state', 'lease_expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'recovery_operations_state_idx', 'recovery_operations');
}
