import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** The event row the trigger writes (see `20261201001100_create_operation_events`). */
const EVENT = sql.raw(`INSERT INTO operation_events (operation_id, at, from_status, to_status, attempt, cycle, failure_code)
  VALUES (NEW.id, NEW.updated_at, OLD.status, NEW.status, NEW.attempt, NEW.retry_count,
    CASE WHEN OLD.status = 'running' AND NEW.status <> 'running' AND OLD.lease_expires_at <= NEW.updated_at
      THEN 'lease_expired' ELSE NEW.failure_code END)`);

/** Whether the trigger writes: `status` and `attempt` are NOT NULL, so `<>` is exact. */
const CHANGED = sql.raw('OLD.status <> NEW.status OR OLD.attempt <> NEW.attempt');

/**
 * Records every change of an operation's `status` or `attempt` in `operation_events` (see `20261201001100`):
 * `AFTER UPDATE ON operations`, one row when either changed — heartbeats, progress and wake-up bookkeeping write none.
 *
 * `failure_code` is the row's code after the change, except when the change ends a `running` attempt whose lease had
 * already expired (`OLD.lease_expires_at <= NEW.updated_at`): that is the sweeper's lease-expiry pass — every worker
 * write is guarded by an unexpired lease on the same clock — and it records `lease_expired` even where the row keeps no
 * code (a retry, or a cancel that was requested). One comparison and one INSERT of values in hand, no read.
 *
 * MariaDB: the `TRIGGER` privilege and, with binary logging on, `log_bin_trust_function_creators=1` (see
 * `20261201001400`; infra/RUNBOOK.md §1).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (columnTypes(db).mariadb) {
    await sql`CREATE TRIGGER operation_events_on_update AFTER UPDATE ON operations FOR EACH ROW
      IF ${CHANGED} THEN ${EVENT}; END IF`.execute(db);
  } else {
    await sql`CREATE TRIGGER operation_events_on_update AFTER UPDATE OF status, attempt ON operations
      WHEN ${CHANGED} BEGIN ${EVENT}; END`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS operation_events_on_update`.execute(db);
}
