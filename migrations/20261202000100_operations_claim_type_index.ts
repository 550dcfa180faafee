import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Claim order inside one lane **and one task type**: highest priority first, then oldest `available_at`. A claim reads
 * one range per (lane, task type) it runs — `claim_lane = ? AND task_type = ?` — in this order and stops after the
 * rows it asked for, so rows queued for task types the claimer does not run are never read. The previous index
 * (`claim_lane`, `priority desc`, `available_at`) had no task type: with `task_type IN (…)` a claim read, and locked,
 * every entry of other task types ahead of its first eligible row (10,001 entries behind 10,000 rows of another type).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('operations_claim_type_idx')
    .on('operations')
    .columns(['claim_lane', 'task_type', 'priority desc', 'available_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_claim_type_idx', 'operations');
}
