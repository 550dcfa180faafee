import type { Kysely } from 'kysely';
import { dropIndex } from './column-types.js';

/** An operation's timeline in order (`seq`), and the retention purge of its events. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('operation_events_operation_idx').on('operation_events').columns(['operation_id', 'seq']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropIndex(db, 'operation_events_operation_idx', 'operation_events');
}
