import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * `operation_events.cancelled_by`: on an event that reached `cancelled`, who had asked for the cancel — the operation's
 * `cancel_requested_by` at that change (see `20261202002500`), written by the update trigger of `20261202002700`; NULL
 * on every other event and on events recorded before it. It keeps each cycle's canceller after an owner retry clears the
 * operation's own column.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('operation_events')
    .addColumn('cancelled_by', t.varchar(128), (c) => (t.mariadb ? c : c.check(lengthCheck('cancelled_by', 128))))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('operation_events').dropColumn('cancelled_by').execute();
}
