import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Claim order inside one lane: highest priority first, then oldest `available_at` — the exact `ORDER BY` of the claim,
 * so the claim reads (and locks) the first eligible row and stops.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_claim_lane_idx').on('operations').columns(['claim_lane', 'priority desc', 'available_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_claim_lane_idx', 'operations');
}
