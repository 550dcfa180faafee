import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** Text parameters compare like the columns they are matched with (the schema's binary, no-pad collation). */
const TEXT = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin';

/**
 * One free slot of a pool into `into`, locked `FOR UPDATE SKIP LOCKED`, from a random start and wrapping once (the
 * search `lockFreeSlots` makes in-process, lib/capacity/capacity.ts); `into` stays NULL when none is free.
 */
const lockOneSlot = (pool: string, limit: string, into: string) => `SET v_start = FLOOR(RAND() * ${limit});
  SELECT slot_no INTO ${into} FROM capacity_slots FORCE INDEX (PRIMARY)
    WHERE pool_key = ${pool} AND operation_id IS NULL AND slot_no >= v_start AND slot_no < ${limit}
    ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF ${into} IS NULL AND v_start > 0 THEN
    SELECT slot_no INTO ${into} FROM capacity_slots FORCE INDEX (PRIMARY)
      WHERE pool_key = ${pool} AND operation_id IS NULL AND slot_no >= 0 AND slot_no < v_start
      ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED;
  END IF;`;

/**
 * `ensure_capacity_pool_v1(pool, limit)`: makes sure slot rows `0 … limit − 1` of the pool exist (one primary-key
 * lookup when its last one does), creating the missing ones in a short transaction of its own — the last slot first, so
 * concurrent creators are harmless (see the body). Called only by the admission routine, outside its reserving
 * transaction. The same rule as `ensurePool` in
 * lib/capacity/capacity.ts.
 */
const ENSURE_POOL = `CREATE PROCEDURE ensure_capacity_pool_v1(IN p_pool VARCHAR(255) ${TEXT}, IN p_limit INT)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: create missing capacity slot rows (docs/design.md, server-side routines)'
BEGIN
  -- A row a concurrent creator inserted first makes INSERT IGNORE warn with 1062, and a routine's warning reaches any
  -- handler for its code — the caller's duplicate-key handler included. Handled here, it goes no further.
  DECLARE CONTINUE HANDLER FOR 1062 BEGIN END;
  IF p_limit > 0 AND NOT EXISTS (SELECT 1 FROM capacity_slots WHERE pool_key = p_pool AND slot_no = p_limit - 1) THEN
    START TRANSACTION;
    -- The last slot first: the one creator that inserts it creates the rest in the same transaction; a concurrent
    -- creator waits on that one row and then, finding it there, inserts nothing — so no creator holds locks on a range
    -- of existing rows that reservers (SKIP LOCKED) would take for held. Only missing rows are inserted (a raised
    -- limit); the numbers 0 … limit − 2 come from the ordinals of a JSON array of that length.
    INSERT IGNORE INTO capacity_slots (pool_key, slot_no, operation_id, reserved_at) VALUES (p_pool, p_limit - 1, NULL, NULL);
    IF ROW_COUNT() = 1 AND p_limit > 1 THEN
      INSERT IGNORE INTO capacity_slots (pool_key, slot_no, operation_id, reserved_at)
        SELECT p_pool, n.k - 1, NULL, NULL
        FROM JSON_TABLE(CONCAT('[', REPEAT('0,', p_limit - 2), '0]'), '$[*]' COLUMNS (k FOR ORDINALITY)) AS n
        WHERE NOT EXISTS (SELECT 1 FROM capacity_slots s WHERE s.pool_key = p_pool AND s.slot_no = n.k - 1);
    END IF;
    COMMIT;
  END IF;
END`;

/**
 * `admit_operation_v1`: the admission of one operation in one round trip on MariaDB (docs/design.md §9, server-side
 * routines; the TypeScript side, its caller and the SQLite implementation of the same decision are in
 * `lib/operations/admission/admit-operation.ts` and `admission-procedure.repository.ts`).
 *
 * One `CALL` with the request's fields reads the owner's live settings (defaults passed in for an owner without a row),
 * decides entitlement and the owner's limits from the plan table the caller passes (`p_plan_limits`: JSON
 * `{"<plan>": [entitled 0|1, per-owner limit, running limit], "*": […]}`), creates any missing slot rows of the three
 * pools (`ensure_capacity_pool_v1`), then in one transaction inserts the `queued` row, makes the owner's turn
 * ready and takes a free owner slot and a free global slot (`FOR UPDATE SKIP LOCKED` from a random start, wrapping),
 * commits, and answers with **one result set**: column `admission_outcome` and, where there is one, the operation row:
 *
 * | `admission_outcome` | meaning | row |
 * |---|---|---|
 * | `admitted` | inserted and committed | the new row |
 * | `replayed` | the key was used for the same request (also while not entitled) | the existing row |
 * | `key_reused` | the key was used for a different request (HTTP 422) | none |
 * | `not_entitled` | the owner's settings do not allow the task type (HTTP 403) | none |
 * | `owner_full` / `global_full` | a pool is full (HTTP 429) | none |
 * | `retry` | the duplicate key's row vanished before it was read (purged): call again | none |
 *
 * Every outcome but `admitted` leaves nothing written (rolled back). Any other error rolls back and is re-raised
 * (`RESIGNAL`), so a deadlock reaches the caller as 1213 and is retried there.
 *
 * `SQL SECURITY INVOKER`: it runs with the caller's rights (the application user: rows and `EXECUTE`,
 * infra/schema-user.sql), not its creator's. No user variables, no prepared statements, no temporary tables, no session
 * changes (RDS Proxy keeps multiplexing: calling a stored procedure does not pin, AWS "Avoiding pinning an RDS Proxy").
 * It runs with the `sql_mode` of the session that created it (the migration's: strict).
 *
 * The routine is never changed in place: a different contract gets a new name (`admit_operation_v2`) created by a
 * new migration, and this one is dropped only by a later release that no longer calls it (expand/contract).
 * SQLite has no stored routines; its admission runs the same statements from TypeScript (up() does nothing there).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql.raw(ENSURE_POOL).execute(db);
  await sql
    .raw(
      `CREATE PROCEDURE admit_operation_v1(
  IN p_id CHAR(36) ${TEXT},
  IN p_owner VARCHAR(128) ${TEXT},
  IN p_task_type VARCHAR(64) ${TEXT},
  IN p_key VARCHAR(128) ${TEXT},
  IN p_hash CHAR(64) ${TEXT},
  IN p_subject_type VARCHAR(64) ${TEXT},
  IN p_subject_id VARCHAR(128) ${TEXT},
  IN p_params_json VARCHAR(4096) ${TEXT},
  IN p_priority INT,
  IN p_max_attempts INT,
  IN p_deadline_ms BIGINT,
  IN p_wake_ms BIGINT,
  IN p_clock_offset_ms BIGINT,
  IN p_turn_seed BIGINT,
  IN p_requires_ai INT,
  IN p_default_plan VARCHAR(32) ${TEXT},
  IN p_default_ai INT,
  IN p_default_privacy VARCHAR(32) ${TEXT},
  IN p_plan_limits VARCHAR(8192) ${TEXT},
  IN p_global_limit INT,
  IN p_owner_pool VARCHAR(255) ${TEXT},
  IN p_global_pool VARCHAR(255) ${TEXT},
  IN p_running_pool VARCHAR(255) ${TEXT}
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: one admission in one round trip (docs/design.md, server-side routines)'
admission: BEGIN
  DECLARE v_now DATETIME(6) DEFAULT DATE_ADD(UTC_TIMESTAMP(6), INTERVAL p_clock_offset_ms * 1000 MICROSECOND);
  DECLARE v_plan VARCHAR(32) ${TEXT} DEFAULT p_default_plan;
  DECLARE v_ai INT DEFAULT p_default_ai;
  DECLARE v_privacy VARCHAR(32) ${TEXT} DEFAULT p_default_privacy;
  DECLARE v_limits VARCHAR(256) ${TEXT};
  DECLARE v_owner_limit INT;
  DECLARE v_running_limit INT;
  DECLARE v_start INT;
  DECLARE v_owner_slot INT DEFAULT NULL;
  DECLARE v_global_slot INT DEFAULT NULL;
  DECLARE v_found_id CHAR(36) ${TEXT} DEFAULT NULL;
  DECLARE v_found_hash CHAR(64) ${TEXT} DEFAULT NULL;
  -- A SELECT … INTO that finds no row leaves its variables as they were (NULL where it matters).
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  -- The idempotency key (or, never in practice, the random id) is taken: answer with the row it names.
  DECLARE EXIT HANDLER FOR 1062
  BEGIN
    ROLLBACK;
    SELECT MAX(id), MAX(request_hash) INTO v_found_id, v_found_hash FROM operations
      WHERE owner_user_id = p_owner AND task_type = p_task_type AND idempotency_key = p_key;
    SELECT IF(v_found_id IS NULL, 'retry', IF(v_found_hash = p_hash, 'replayed', 'key_reused')) AS admission_outcome, o.*
      FROM (SELECT 1 AS one) AS answer LEFT JOIN operations o ON o.id = v_found_id AND v_found_hash = p_hash;
  END;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    RESIGNAL;
  END;

  SELECT plan, ai_enabled, privacy_mode INTO v_plan, v_ai, v_privacy FROM owner_settings WHERE owner_user_id = p_owner;
  SET v_limits = COALESCE(JSON_QUERY(p_plan_limits, CONCAT('$."', v_plan, '"')), JSON_QUERY(p_plan_limits, '$."*"'));
  IF COALESCE(JSON_VALUE(v_limits, '$[0]'), 0) <> 1 OR (p_requires_ai = 1 AND v_ai <> 1) THEN
    -- A replay of an admission made while entitled still answers with that operation; only new work is refused.
    SELECT MAX(id), MAX(request_hash) INTO v_found_id, v_found_hash FROM operations
      WHERE owner_user_id = p_owner AND task_type = p_task_type AND idempotency_key = p_key;
    SELECT IF(v_found_id IS NOT NULL AND v_found_hash = p_hash, 'replayed', 'not_entitled') AS admission_outcome, o.*
      FROM (SELECT 1 AS one) AS answer LEFT JOIN operations o ON o.id = v_found_id AND v_found_hash = p_hash;
    LEAVE admission;
  END IF;
  SET v_owner_limit = JSON_VALUE(v_limits, '$[1]');
  SET v_running_limit = JSON_VALUE(v_limits, '$[2]');

  -- Missing slot rows (a new owner, a raised limit) are created before the reserving transaction, so their creation
  -- never holds its locks.
  CALL ensure_capacity_pool_v1(p_owner_pool, v_owner_limit);
  CALL ensure_capacity_pool_v1(p_global_pool, p_global_limit);
  CALL ensure_capacity_pool_v1(p_running_pool, v_running_limit);

  START TRANSACTION;
  INSERT INTO operations (id, owner_user_id, task_type, idempotency_key, request_hash, subject_type, subject_id, params_json,
      privacy_mode, priority, max_attempts, status, attempt, retry_count, progress_percent,
      created_at, updated_at, available_at, deadline_at, wake_at)
    VALUES (p_id, p_owner, p_task_type, p_key, p_hash, p_subject_type, p_subject_id, p_params_json,
      v_privacy, p_priority, p_max_attempts, 'queued', 0, 0, 0,
      v_now, v_now, v_now, DATE_ADD(v_now, INTERVAL p_deadline_ms * 1000 MICROSECOND), DATE_ADD(v_now, INTERVAL p_wake_ms * 1000 MICROSECOND));
  INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
    VALUES (p_task_type, p_owner, v_now, '1970-01-01 00:00:00.000', p_turn_seed)
    ON DUPLICATE KEY UPDATE ready_at = LEAST(owner_turns.ready_at, VALUES(ready_at)), work_seq = owner_turns.work_seq + 1;

  -- The owner pool first, so an owner at their own limit never touches the shared pool.
  ${lockOneSlot('p_owner_pool', 'v_owner_limit', 'v_owner_slot')}
  IF v_owner_slot IS NULL THEN
    ROLLBACK;
    SELECT 'owner_full' AS admission_outcome;
    LEAVE admission;
  END IF;
  ${lockOneSlot('p_global_pool', 'p_global_limit', 'v_global_slot')}
  IF v_global_slot IS NULL THEN
    ROLLBACK;
    SELECT 'global_full' AS admission_outcome;
    LEAVE admission;
  END IF;
  UPDATE capacity_slots SET operation_id = p_id, reserved_at = v_now
    WHERE ((pool_key = p_owner_pool AND slot_no = v_owner_slot) OR (pool_key = p_global_pool AND slot_no = v_global_slot))
      AND operation_id IS NULL;
  IF ROW_COUNT() <> 2 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'admit_operation_v1: capacity slots changed under their locks';
  END IF;
  COMMIT;
  SELECT 'admitted' AS admission_outcome, o.* FROM operations o WHERE o.id = p_id;
END`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS admit_operation_v1`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS ensure_capacity_pool_v1`.execute(db);
}
