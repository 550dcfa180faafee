import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** Claim order: the claim scans claimable rows by status, highest priority first, oldest available first. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_claim_idx').on('operations').columns(['status', 'priority', 'available_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_claim_idx', 'operations');
}
