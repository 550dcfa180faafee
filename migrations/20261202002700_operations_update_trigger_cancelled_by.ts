import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';
import { up as createUpdateTriggerV1 } from './20261201001500_operations_update_trigger.js';

/** The event row the trigger writes: `20261201001500`'s, plus `cancelled_by` on a change to `cancelled`. */
const EVENT = sql.raw(`INSERT INTO operation_events (operation_id, at, from_status, to_status, attempt, cycle, failure_code, cancelled_by)
  VALUES (NEW.id, NEW.updated_at, OLD.status, NEW.status, NEW.attempt, NEW.retry_count,
    CASE WHEN OLD.status = 'running' AND NEW.status <> 'running' AND OLD.lease_expires_at <= NEW.updated_at
      THEN 'lease_expired' ELSE NEW.failure_code END,
    CASE WHEN NEW.status = 'cancelled' THEN NEW.cancel_requested_by ELSE NULL END)`);

/** Whether the trigger writes, as in `20261201001500`. */
const CHANGED = sql.raw('OLD.status <> NEW.status OR OLD.attempt <> NEW.attempt');

/**
 * Replaces `operation_events_on_update` (`20261201001500`: when it writes, and its `failure_code` rule, are unchanged)
 * with one that also records who asked for a cancel in `operation_events.cancelled_by` (`20261202002600`). The swap
 * never leaves a moment without the trigger: MariaDB replaces it in one statement (`CREATE OR REPLACE TRIGGER`), SQLite
 * drops and creates it in one transaction.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (columnTypes(db).mariadb) {
    await sql`CREATE OR REPLACE TRIGGER operation_events_on_update AFTER UPDATE ON operations FOR EACH ROW
      IF ${CHANGED} THEN ${EVENT}; END IF`.execute(db);
  } else {
    await db.transaction().execute(async (tx) => {
      await sql`DROP TRIGGER operation_events_on_update`.execute(tx);
      await sql`CREATE TRIGGER operation_events_on_update AFTER UPDATE OF status, attempt ON operations
        WHEN ${CHANGED} BEGIN ${EVENT}; END`.execute(tx);
    });
  }
}

/**
 * Back to `20261201001500`'s trigger (which writes no `cancelled_by`), dropped and created in one transaction on SQLite.
 * MariaDB commits each trigger statement on its own, so there a change made between the two writes no event — a down
 * migration is for a stack that is stopped.
 */
export async function down(db: Kysely<any>): Promise<void> {
  const swap = async (on: Kysely<any>) => {
    await sql`DROP TRIGGER IF EXISTS operation_events_on_update`.execute(on);
    await createUpdateTriggerV1(on);
  };
  if (columnTypes(db).mariadb) await swap(db);
  else await db.transaction().execute(swap);
}
