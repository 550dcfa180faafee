import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** The claim reads `operations_claim_lane_idx` now; the old status-ordered claim index only cost writes. */
export async function up(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_claim_idx', 'operations');
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operations_claim_idx').on('operations').columns(['status', 'priority', 'available_at']).execute();
}
