import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/**
 * The turn index by task type first — `owner_turns_type_turn_idx` (task_type, served_at, owner_user_id) — so a claim
 * reads one task type's ready turns as one range in turn order (docs/design.md §4, fair share); the first index
 * (served_at first) made MariaDB read the primary key and sort.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('owner_turns_type_turn_idx').on('owner_turns').columns(['task_type', 'served_at', 'owner_user_id']).execute();
  await dropIndex(db, 'owner_turns_turn_idx', 'owner_turns');
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('owner_turns_turn_idx').on('owner_turns').columns(['served_at', 'task_type', 'owner_user_id']).execute();
  await dropIndex(db, 'owner_turns_type_turn_idx', 'owner_turns');
}
