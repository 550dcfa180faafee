import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** Text compares like the columns it is matched with (the schema's binary, no-pad collation). */
const TEXT = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin';

/** The completion group's leases, as the routine reads its JSON parameter `[[id, owner, lease token], …]`. */
const LEASES = `JSON_TABLE(p_leases, '$[*]' COLUMNS (
      id CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PATH '$[0]',
      owner_user_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PATH '$[1]',
      lease_token CHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PATH '$[2]'))`;

/** The listed leases that hold, locked: their ids as a JSON array and their count, into the routine's variables. */
const LIVE_LEASES = `STRAIGHT_JOIN COALESCE(JSON_ARRAYAGG(o.id), '[]'), COUNT(*) INTO v_held, v_count
    FROM ${LEASES} AS l
    JOIN operations o FORCE INDEX (PRIMARY) ON o.id = l.id AND o.owner_user_id = l.owner_user_id AND o.lease_token = l.lease_token
    WHERE o.status = 'running' AND o.lease_expires_at > v_now`;

/** The ids the routine locked, as it reads its own JSON array of them. */
const HELD = `JSON_TABLE(v_held, '$[*]' COLUMNS (id CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PATH '$'))`;

/** The lease guard of every move out of `running` under a lease (`leaseHolds` in lifecycle.repository.ts). */
const LEASE_HOLDS = `id = p_id AND owner_user_id = p_owner AND lease_token = p_token AND status = 'running' AND lease_expires_at > v_now`;

/** The idle turns `v_idle` / locked turns `v_locked` as the routine reads its own JSON arrays of them. */
const TURNS = (json: string) => `JSON_TABLE(${json}, '$[*]' COLUMNS (
        task_type VARCHAR(64) ${TEXT} PATH '$[0]', owner_user_id VARCHAR(128) ${TEXT} PATH '$[1]', work_seq BIGINT PATH '$[2]'))`;

/**
 * The statements that retire idle turns after the operations listed in `ids` (a table expression of one `id` column)
 * moved to a terminal state in the routine's transaction — `retireIdleTurns` in
 * lib/operations/lease/owner-turns.repository.ts, the consequence `move` writes in-process for the worker's moves: one
 * read of each of their (task type, owner) pairs' turn `work_seq` where the pair has nothing claimable left (no
 * `claim_lane` `L`/`X` row inside its deadline; one statement, one snapshot), then a lock of those turns still at
 * that `work_seq` (`FOR UPDATE SKIP LOCKED`: a turn another transaction holds is left to it, never waited for), in key
 * order, then their delete.
 */
const retireIdleTurns = (ids: string) => `SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(t.task_type, t.owner_user_id, t.work_seq) ORDER BY t.task_type, t.owner_user_id), '[]')
      INTO v_idle
      FROM (SELECT DISTINCT o.task_type, o.owner_user_id FROM ${ids} AS h STRAIGHT_JOIN operations o FORCE INDEX (PRIMARY) ON o.id = h.id) AS p
      STRAIGHT_JOIN owner_turns t ON t.task_type = p.task_type AND t.owner_user_id = p.owner_user_id
      WHERE NOT EXISTS (SELECT 1 FROM operations d FORCE INDEX (operations_owner_claim_idx)
        WHERE d.claim_lane IN ('L', 'X') AND d.task_type = p.task_type AND d.owner_user_id = p.owner_user_id AND d.deadline_at > v_now);
    SELECT STRAIGHT_JOIN COALESCE(JSON_ARRAYAGG(JSON_ARRAY(t.task_type, t.owner_user_id, t.work_seq)), '[]') INTO v_locked
      FROM ${TURNS('v_idle')} AS i
      JOIN owner_turns t ON t.task_type = i.task_type AND t.owner_user_id = i.owner_user_id AND t.work_seq = i.work_seq
      FOR UPDATE SKIP LOCKED;
    DELETE t FROM ${TURNS('v_locked')} AS i
      STRAIGHT_JOIN owner_turns t ON t.task_type = i.task_type AND t.owner_user_id = i.owner_user_id AND t.work_seq = i.work_seq;`;

/**
 * `complete_operations_v2(leases, wait for locks 0|1, clock offset ms)`: `complete_operations_v1`'s contract
 * (migrations/20261202001700_create_complete_operations_v1.ts: parameters, locking, answer) plus one more consequence
 * in its transaction — the owners' capacity counters (`owner_capacity`: `active` and `running` down by the operations
 * completed, in key order) instead of per-owner slot rows, and the completed operations' turns retired when their pair
 * has nothing claimable left ({@link retireIdleTurns}), as `move` does in-process. `v1` stays for a release that still calls it and is dropped
 * by a later one (expand/contract, docs/design.md §9).
 */
const COMPLETE_OPERATIONS = `CREATE PROCEDURE complete_operations_v2(
  IN p_leases TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
  IN p_wait_for_locks INT,
  IN p_clock_offset_ms BIGINT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: a completion group in one round trip (docs/design.md, server-side routines)'
completion: BEGIN
  DECLARE v_now DATETIME(6) DEFAULT DATE_ADD(UTC_TIMESTAMP(6), INTERVAL p_clock_offset_ms * 1000 MICROSECOND);
  DECLARE v_held TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;
  DECLARE v_count INT;
  DECLARE v_due TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin DEFAULT '[]';
  DECLARE v_idle TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin DEFAULT '[]';
  DECLARE v_locked TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin DEFAULT '[]';
  DECLARE v_pairs TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin DEFAULT '[]';
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    RESIGNAL;
  END;

  START TRANSACTION;
  IF p_wait_for_locks = 1 THEN
    SELECT ${LIVE_LEASES} FOR UPDATE;
  ELSE
    SELECT ${LIVE_LEASES} FOR UPDATE SKIP LOCKED;
  END IF;
  IF v_count > 0 THEN
    UPDATE ${HELD} AS h STRAIGHT_JOIN operations o FORCE INDEX (PRIMARY) ON o.id = h.id
      SET o.status = 'succeeded', o.updated_at = v_now, o.lease_token = NULL, o.lease_expires_at = NULL, o.finished_at = v_now,
        o.available_at = NULL, o.wake_at = NULL, o.failure_code = NULL, o.failure_message = NULL, o.progress_percent = 100
      WHERE o.status = 'running' AND o.lease_expires_at > v_now;
    IF ROW_COUNT() <> v_count THEN
      ROLLBACK;
      SELECT 'lapsed' AS completion_outcome, NULL AS held, NULL AS due;
      LEAVE completion;
    END IF;
    INSERT INTO operation_notifications (operation_id, owner_user_id, task_type, status, failure_code, cycle, created_at)
      SELECT STRAIGHT_JOIN o.id, o.owner_user_id, o.task_type, o.status, o.failure_code, o.retry_count, v_now
      FROM ${HELD} AS h JOIN operations o FORCE INDEX (PRIMARY) ON o.id = h.id;
    UPDATE ${HELD} AS h STRAIGHT_JOIN capacity_slots s FORCE INDEX (capacity_slots_holder_idx) ON s.operation_id = h.id
      SET s.operation_id = NULL, s.reserved_at = NULL;
    -- The owners' counters (each completed operation was active and running), in key order, before their turns.
    SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(x.task_type, x.owner_user_id, x.n) ORDER BY x.task_type, x.owner_user_id), '[]') INTO v_pairs
      FROM (SELECT o.task_type, o.owner_user_id, COUNT(*) AS n FROM ${HELD} AS h STRAIGHT_JOIN operations o FORCE INDEX (PRIMARY) ON o.id = h.id
        GROUP BY o.task_type, o.owner_user_id) AS x;
    UPDATE JSON_TABLE(v_pairs, '$[*]' COLUMNS (task_type VARCHAR(64) ${TEXT} PATH '$[0]', owner_user_id VARCHAR(128) ${TEXT} PATH '$[1]',
        n INT PATH '$[2]')) AS p
      STRAIGHT_JOIN owner_capacity c ON c.task_type = p.task_type AND c.owner_user_id = p.owner_user_id
      SET c.active = IF(c.active > p.n, c.active - p.n, 0), c.running = IF(c.running > p.n, c.running - p.n, 0);
    ${retireIdleTurns(HELD)}
  END IF;
  COMMIT;
  -- Which completed operations' owners still have a due operation of the type (the worker wakes a claimer for them):
  -- a plain read after the commit, one range of the owner's claim index each; a row another claimer holds counts.
  SELECT STRAIGHT_JOIN COALESCE(JSON_ARRAYAGG(h.id), '[]') INTO v_due
    FROM ${HELD} AS h JOIN operations o FORCE INDEX (PRIMARY) ON o.id = h.id
    WHERE EXISTS (SELECT 1 FROM operations d FORCE INDEX (operations_owner_claim_idx)
      WHERE d.claim_lane IN ('L', 'X') AND d.task_type = o.task_type AND d.owner_user_id = o.owner_user_id
        AND d.available_at <= v_now AND d.deadline_at > v_now);
  SELECT 'completed' AS completion_outcome, v_held AS held, v_due AS due;
END`;

/**
 * `fail_attempt_v2`: `fail_attempt_v1`'s contract (migrations/20261202002100_create_fail_attempt_v1.ts) with the owner's
 * capacity counters (`owner_capacity`: `running` down by one, and `active` too when the outcome is terminal) before
 * the turn is written, plus, when the outcome is terminal (`failed`, or `cancelled` by the owner's recorded cancel),
 * the retirement of the operation's turn when its pair has nothing claimable left ({@link retireIdleTurns}). `v1` stays for a release that still calls it.
 */
const FAIL_ATTEMPT = `CREATE PROCEDURE fail_attempt_v2(
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
  DECLARE v_idle TEXT ${TEXT} DEFAULT '[]';
  DECLARE v_locked TEXT ${TEXT} DEFAULT '[]';
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
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fail_attempt_v2: p_status must be failed, waiting_for_retry or waiting_for_external_fallback';
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
    UPDATE owner_capacity SET active = IF(active > 0, active - 1, 0), running = IF(running > 0, running - 1, 0)
      WHERE task_type = (SELECT task_type FROM operations WHERE id = p_id) AND owner_user_id = p_owner;
    ${retireIdleTurns(`JSON_TABLE(JSON_ARRAY(p_id), '$[*]' COLUMNS (id CHAR(36) ${TEXT} PATH '$'))`)}
  ELSE
    UPDATE capacity_slots SET operation_id = NULL, reserved_at = NULL
      WHERE operation_id = p_id AND (pool_key LIKE CONCAT(p_route_prefix, '%') OR pool_key LIKE CONCAT(p_running_prefix, '%'));
    UPDATE owner_capacity SET running = IF(running > 0, running - 1, 0)
      WHERE task_type = (SELECT task_type FROM operations WHERE id = p_id) AND owner_user_id = p_owner;
    INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
      SELECT task_type, owner_user_id, available_at, '1970-01-01 00:00:00.000', p_turn_seed FROM operations WHERE id = p_id
      ON DUPLICATE KEY UPDATE ready_at = LEAST(owner_turns.ready_at, VALUES(ready_at)), work_seq = owner_turns.work_seq + 1;
  END IF;
  COMMIT;
  SELECT v_outcome AS attempt_outcome;
END`;

/** Completion and failure that retire idle turns, as server-side routines; SQLite runs the same from TypeScript. */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql.raw(COMPLETE_OPERATIONS).execute(db);
  await sql.raw(FAIL_ATTEMPT).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS complete_operations_v2`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS fail_attempt_v2`.execute(db);
}
