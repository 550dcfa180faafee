import { sql, type Kysely } from 'kysely';

/**
 * The harness's own tables, created next to the library's schema in the chaos database (MariaDB only), never part of
 * the library's migrations:
 *
 * - `chaos_effects`: the side-effect log. The chaos task writes one row per successful run, keyed by operation and
 *   attempt, inside the transaction that marks the operation `succeeded` (`TaskCompletion.publish`), so a row exists
 *   if and only if that attempt's success committed. No unique key: a second effect must be visible, not prevented.
 * - `chaos_transitions`: every change of an operation's status, attempt or lease token, in commit order per row,
 *   recorded by triggers on `operations` (the Jepsen-style history the checker reads). Heartbeats that only move
 *   `lease_expires_at` are not recorded.
 */
export async function createChaosSchema(db: Kysely<any>): Promise<void> {
  await sql`CREATE TABLE IF NOT EXISTS chaos_effects (
      id BIGINT AUTO_INCREMENT PRIMARY KEY,
      operation_id CHAR(36) NOT NULL,
      attempt INT NOT NULL,
      worker VARCHAR(64) NOT NULL,
      created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
      KEY chaos_effects_operation (operation_id, attempt)
    ) ENGINE=InnoDB`.execute(db);
  await sql`CREATE TABLE IF NOT EXISTS chaos_transitions (
      seq BIGINT AUTO_INCREMENT PRIMARY KEY,
      operation_id CHAR(36) NOT NULL,
      from_status VARCHAR(32) NULL,
      to_status VARCHAR(32) NOT NULL,
      from_attempt INT NULL,
      to_attempt INT NOT NULL,
      lease_changed TINYINT NOT NULL,
      KEY chaos_transitions_operation (operation_id, seq)
    ) ENGINE=InnoDB`.execute(db);
  await sql`DROP TRIGGER IF EXISTS chaos_operations_inserted`.execute(db);
  await sql`CREATE TRIGGER chaos_operations_inserted AFTER INSERT ON operations FOR EACH ROW
      INSERT INTO chaos_transitions (operation_id, from_status, to_status, from_attempt, to_attempt, lease_changed)
      VALUES (NEW.id, NULL, NEW.status, NULL, NEW.attempt, NEW.lease_token IS NOT NULL)`.execute(db);
  await sql`DROP TRIGGER IF EXISTS chaos_operations_updated`.execute(db);
  await sql`CREATE TRIGGER chaos_operations_updated AFTER UPDATE ON operations FOR EACH ROW
      IF NOT (OLD.status <=> NEW.status) OR NOT (OLD.attempt <=> NEW.attempt) OR NOT (OLD.lease_token <=> NEW.lease_token) THEN
        INSERT INTO chaos_transitions (operation_id, from_status, to_status, from_attempt, to_attempt, lease_changed)
        VALUES (NEW.id, OLD.status, NEW.status, OLD.attempt, NEW.attempt, NOT (OLD.lease_token <=> NEW.lease_token));
      END IF`.execute(db);
}

/** Writes one effect row in the caller's transaction (the success transaction of a chaos run). */
export async function insertEffect(tx: Kysely<any>, effect: { operationId: string; attempt: number; worker: string }): Promise<void> {
  await tx.insertInto('chaos_effects').values({ operation_id: effect.operationId, attempt: effect.attempt, worker: effect.worker }).execute();
}
