import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * The history of every operation (the operator console's timeline and throughput): one row per change of an
 * operation's `status` or `attempt`, written by the triggers of `20261201001400` (insert) and `20261201001500`
 * (update) — never by the code, so no write path can forget one.
 *
 * - `seq`: a global auto-increment; an operation's events in `seq` order are its changes in commit order (every change
 *   of one operation holds its row lock, so two never interleave).
 * - `at`: the operation's `updated_at` after the change (database clock, UTC).
 * - `from_status` (NULL for the admission), `to_status`, `attempt` and `cycle` (the operation's `retry_count`: owner
 *   retries so far) after the change.
 * - `failure_code`: the operation's failure code after the change, or `lease_expired` when the change ended a lease that
 *   had expired (the sweeper's lease-expiry pass, docs/design.md §2, which leaves no code on the row when it retries or cancels).
 *
 * No raw content, lease token, idempotency key or params (docs/design.md §2). Retention deletes an operation's events with the
 * operation (the sweeper's purge).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const text = (name: string, max: number, nullable = false) => (c: any) => {
    const column = nullable ? c : c.notNull();
    return t.mariadb ? column : column.check(lengthCheck(name, max));
  };
  await db.schema
    .createTable('operation_events')
    .addColumn('seq', t.mariadb ? sql.raw('bigint') : sql.raw('integer'), (c) => c.primaryKey().autoIncrement())
    .addColumn('operation_id', t.char(36), text('operation_id', 36))
    .addColumn('at', t.datetime(), (c) => c.notNull())
    .addColumn('from_status', t.varchar(32), text('from_status', 32, true))
    .addColumn('to_status', t.varchar(32), text('to_status', 32))
    .addColumn('attempt', t.int(), (c) => c.notNull())
    .addColumn('cycle', t.int(), (c) => c.notNull())
    .addColumn('failure_code', t.varchar(64), text('failure_code', 64, true))
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('operation_events').execute();
}
