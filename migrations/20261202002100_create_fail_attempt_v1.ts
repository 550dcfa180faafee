import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** Text compares like the columns it is matched with (the schema's binary, no-pad collation). */
const TEXT = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin';

/** The lease guard of every move out of `running` under a lease (`leaseHolds` in lifecycle.repository.ts). */
const LEASE_HOLDS = `id = p_id AND owner_user_id = p_owner AND lease_token = p_token AND status = 'running' AND lease_expires_at > v_now`;

/**
 * `fail_attempt_v1`: a failed attempt's outcome under its lease in one round trip on MariaDB (docs/design.md §2, §9;
 * the caller and the SQLite implementation of the same decision are `recordFailedAttempt` in
 * lib/operations/lease/lease-operations.ts and `failAttempt` in lib/operations/lifecycle/transitions.ts).
 *
 * `p_status` is the worker's decision (`attemptOutcome` with no cancel requested): `failed` (with `p_failure_code`),
 * `waiting_for_retry` (claimable `p_retry_in_ms` after now) or `waiting_for_external_fallback` (claimable now). In one
 * transaction it is written only while the lease holds and no cancel is recorded — else, when the owner's cancel is
 * recorded, the operation becomes `cancelled` instead (the owner's cancel wins, decided by the statements, not by an
 * earlier read) — with the consequences `move` writes: a terminal outcome writes one notification and frees every
 * slot; a waiting one frees the execution slots (`p_route_prefix…`, `p_running_prefix…`), keeps the admission slots
 * and makes the owner's turn ready from its `available_at`. The wake-up re-send is due `p_wake_ms` after now.
 * Answers one row, `attempt_outcome`: the status written, or `lost` (the lease is gone; nothing changed).
 *
 * `SQL SECURITY INVOKER`, no user variables, prepared statements, temporary tables or session changes (RDS Proxy does
 * not pin a `CALL`). Never changed in place: a new contract is a new name (expand/contract).
 */
const FAIL_ATTEMPT = `CREATE PROCEDURE fail_attempt_v1(
  IN p_id CHAR(36) ${TEXT},
  IN p_owner VARCHAR(128) ${TEXT},
  IN p_token CHAR(64) ${TEXT},
  IN p_status VARCHAR(32) ${TEXT},
  IN p_failure_code VARCHAR(64) ${TEXT},
  IN p_message VARCHAR(512) ${TEXT},
  IN p_retry_in_ms BIGINT,
  IN p_wake_ms BIGINT,
  IN p_route_prefix VARCHAR(64) ${TEXT},
  IN p_running_prefix VARCHAR(64) ${TEXT},
  IN p_turn_seed BIGINT,
  IN p_clock_offset_ms BIGINT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: a failed attempt in one round trip (docs/design.md, server-side routines)'
failure: BEGIN
  DECLARE v_now DATETIME(6) DEFAULT DATE_ADD(UTC_TIMESTAMP(6), INTERVAL p_clock_offset_ms * 1000 MICROSECOND);
  DECLARE v_outcome VARCHAR(32) ${TEXT} DEFAULT p_status;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    RESIGNAL;
  END;

  START TRANSACTION;
  IF p_status = 'failed' THEN
    UPDATE operations SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = v_now, available_at = NULL,
        wake_at = NULL, failure_code = p_failure_code, failure_message = p_message, updated_at = v_now
      WHERE ${LEASE_HOLDS} AND cancel_requested_at IS NULL;
  ELSEIF p_status = 'waiting_for_external_fallback' THEN
    UPDATE operations SET status = 'waiting_for_external_fallback', lease_token = NULL, lease_expires_at = NULL, failure_code = NULL,
        failure_message = p_message, available_at = v_now, wake_at = DATE_ADD(v_now, INTERVAL p_wake_ms * 1000 MICROSECOND), updated_at = v_now
      WHERE ${LEASE_HOLDS} AND cancel_requested_at IS NULL;
  ELSEIF p_status = 'waiting_for_retry' THEN
    UPDATE operations SET status = 'waiting_for_retry', lease_token = NULL, lease_expires_at = NULL, failure_code = NULL,
        failure_message = p_message, available_at = DATE_ADD(v_now, INTERVAL p_retry_in_ms * 1000 MICROSECOND),
        wake_at = DATE_ADD(v_now, INTERVAL p_wake_ms * 1000 MICROSECOND), updated_at = v_now
      WHERE ${LEASE_HOLDS} AND cancel_requested_at IS NULL;
  ELSE
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fail_attempt_v1: p_status must be failed, waiting_for_retry or waiting_for_external_fallback';
  END IF;
  IF ROW_COUNT() = 0 THEN
    -- Not written: the owner's cancel (recorded meanwhile) wins, or the lease is gone.
    UPDATE operations SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, finished_at = v_now, available_at = NULL,
        wake_at = NULL, failure_code = NULL, failure_message = NULL, updated_at = v_now
      WHERE ${LEASE_HOLDS} AND cancel_requested_at IS NOT NULL;
    IF ROW_COUNT() = 0 THEN
      ROLLBACK;
      SELECT 'lost' AS attempt_outcome;
      LEAVE failure;
    END IF;
    SET v_outcome = 'cancelled';
  END IF;
  IF v_outcome IN ('failed', 'cancelled') THEN
    INSERT INTO operation_notifications (operation_id, owner_user_id, task_type, status, failure_code, cycle, created_at)
      SELECT id, owner_user_id, task_type, status, failure_code, retry_count, v_now FROM operations WHERE id = p_id;
    UPDATE capacity_slots SET operation_id = NULL, reserved_at = NULL WHERE operation_id = p_id;
  ELSE
    UPDATE capacity_slots SET operation_id = NULL, reserved_at = NULL
      WHERE operation_id = p_id AND (pool_key LIKE CONCAT(p_route_prefix, '%') OR pool_key LIKE CONCAT(p_running_prefix, '%'));
    INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
      SELECT task_type, owner_user_id, available_at, '1970-01-01 00:00:00.000', p_turn_seed FROM operations WHERE id = p_id
      ON DUPLICATE KEY UPDATE ready_at = LEAST(owner_turns.ready_at, VALUES(ready_at)), work_seq = owner_turns.work_seq + 1;
  END IF;
  COMMIT;
  SELECT v_outcome AS attempt_outcome;
END`;

/** The failed attempt as a server-side routine (see {@link FAIL_ATTEMPT}); SQLite runs it from TypeScript. */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql.raw(FAIL_ATTEMPT).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS fail_attempt_v1`.execute(db);
}
