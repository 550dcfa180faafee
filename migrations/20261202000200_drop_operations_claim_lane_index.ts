import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The claim reads `operations_claim_type_idx` now (one range per lane and task type); the lane-only index only cost writes. */
export async function up(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_claim_lane_idx', 'operations');
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_claim_lane_idx').on('operations').columns(['claim_lane', 'priority desc', 'available_at']).execute();
}
