import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * Claim order inside one owner's queue: the fair claim picks an owner (`owner_turns`), then reads that owner's best
 * rows of one lane and task type — `claim_lane = ? AND task_type = ? AND owner_user_id = ?`, highest priority first,
 * then oldest — from this index and stops after the rows it asked for, so another owner's backlog is never read.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('operations_owner_claim_idx')
    .on('operations')
    .columns(['claim_lane', 'task_type', 'owner_user_id', 'priority desc', 'available_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operations_owner_claim_idx', 'operations');
}
