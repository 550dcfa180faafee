import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** The event row the trigger writes (see `20261201001100_create_operation_events`). */
const EVENT = sql.raw(`INSERT INTO operation_events (operation_id, at, from_status, to_status, attempt, cycle, failure_code)
  VALUES (NEW.id, NEW.updated_at, NULL, NEW.status, NEW.attempt, NEW.retry_count, NEW.failure_code)`);

/**
 * Records every admission in `operation_events` (see `20261201001100`): `AFTER INSERT ON operations`, one row
 * (`from_status` NULL, `to_status` `queued`, `at` = the row's `updated_at`). One INSERT of values already in hand, no
 * read: the admission pays one more row write in its own transaction.
 *
 * MariaDB: creating a trigger needs the `TRIGGER` privilege (infra/schema-user.sql grants it to the migration user) and,
 * **with binary logging on (RDS, whenever backups are enabled), `log_bin_trust_function_creators=1`** unless the user
 * has SUPER, which RDS never grants: infra/rds-mariadb.yml sets it in the DB parameter group (infra/RUNBOOK.md §1).
 * The trigger runs with its definer's (the migration user's) rights, so that user must keep existing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (columnTypes(db).mariadb) {
    await sql`CREATE TRIGGER operation_events_on_insert AFTER INSERT ON operations FOR EACH ROW ${EVENT}`.execute(db);
  } else {
    await sql`CREATE TRIGGER operation_events_on_insert AFTER INSERT ON operations BEGIN ${EVENT}; END`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS operation_events_on_insert`.execute(db);
}
