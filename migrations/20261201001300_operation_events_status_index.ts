import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Throughput per minute (`GET /api/ops/throughput`): events reaching `queued`, `succeeded`, `failed` or `cancelled` in a
 * time window, read from this index alone — one range per status, never the claims and retries in between; with
 * `from_status` in it, an admission (from nothing) and an owner retry (from failed/cancelled) are told apart without
 * reading the rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operation_events_status_idx').on('operation_events').columns(['to_status', 'at', 'from_status']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operation_events_status_idx', 'operation_events');
}
