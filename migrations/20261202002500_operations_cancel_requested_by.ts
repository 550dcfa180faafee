import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Who asked for an operation's cancel (docs/design.md §8 "Ops surface"): `cancel_requested_by` is set with
 * `cancel_requested_at` — `owner` for the owner's own cancel, `operator:<sub>` for an operator's over HTTP,
 * `cli:<user>@<host>` for `durable-ops cancel` — and cleared with it by an owner retry. At most 128 characters. NULL on
 * rows cancelled before this migration (the actor was not recorded). Operator-only: no owner DTO shows it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('operations')
    .addColumn('cancel_requested_by', t.varchar(128), (c) => (t.mariadb ? c : c.check(lengthCheck('cancel_requested_by', 128))))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('operations').dropColumn('cancel_requested_by').execute();
}
