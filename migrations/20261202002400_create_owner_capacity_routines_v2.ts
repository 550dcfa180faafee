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

/** Turns (`[served_at, task_type, owner, work_seq, type index]`) of a JSON array, as rows. */
const TURNS = (source: string) => `JSON_TABLE(${source}, '$[*]' COLUMNS (
      s VARCHAR(32) ${TEXT} PATH '$[0]', t VARCHAR(64) ${TEXT} PATH '$[1]', o VARCHAR(128) ${TEXT} PATH '$[2]',
      w BIGINT PATH '$[3]', j INT PATH '$[4]'))`;

/** One lane's best due rows of the owner (`[id, status, priority, available_at, lane]`), locked, appended to `v_cands`. */
const LANE_CANDIDATES = (lane: 'L' | 'X') => `
    SELECT JSON_MERGE_PRESERVE(v_cands, COALESCE(JSON_ARRAYAGG(JSON_ARRAY(id, status, priority, available_at, '${lane}')), '[]')) INTO v_cands
      FROM (SELECT id, status, priority, available_at FROM operations FORCE INDEX (operations_owner_claim_idx)
        WHERE claim_lane = '${lane}' AND task_type = v_type AND owner_user_id = v_owner AND available_at <= p_now AND deadline_at > p_now
        ORDER BY priority DESC, available_at ASC LIMIT v_nslots FOR UPDATE SKIP LOCKED) AS due;`;

/**
 * `ensure_owner_capacity_v1(task type, owner)`: makes sure the pair has its `owner_capacity` row (one primary-key
 * lookup when it does), creating it with its counters counted from its operations (so operations admitted before it
 * count), in its own statement — `ensureOwnerCapacityRows` in lib/capacity/owner-capacity.repository.ts. Called by
 * the admission routine outside its reserving transaction. A concurrent creator's row is kept (`INSERT IGNORE`, whose
 * duplicate warning is handled here so it reaches no caller's handler).
 */
const ENSURE_OWNER = `CREATE PROCEDURE ensure_owner_capacity_v1(IN p_task_type VARCHAR(64) ${TEXT}, IN p_owner VARCHAR(128) ${TEXT})
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: create a missing owner capacity row (docs/design.md, server-side routines)'
BEGIN
  DECLARE v_exists INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR 1062 BEGIN END;
  -- A plain SELECT … INTO: a subquery in IF or SET would take a shared lock on the row (MariaDB, in a routine).
  SELECT COUNT(*) INTO v_exists FROM owner_capacity WHERE task_type = p_task_type AND owner_user_id = p_owner;
  IF v_exists = 0 THEN
    -- Counted as truthOf in owner-capacity.repository.ts: claimable rows (the owner's claim index) and running rows (the
    -- running rows' index), never the owner's history.
    INSERT IGNORE INTO owner_capacity (task_type, owner_user_id, active, running)
      SELECT p_task_type, p_owner, c.claimable + r.running, r.running
      FROM (SELECT COUNT(*) AS claimable FROM operations o FORCE INDEX (operations_owner_claim_idx)
          WHERE o.claim_lane IN ('L', 'X') AND o.task_type = p_task_type AND o.owner_user_id = p_owner) AS c
        JOIN (SELECT COUNT(*) AS running FROM operations o FORCE INDEX (operations_expiry_idx)
          WHERE o.status = 'running' AND o.task_type = p_task_type AND o.owner_user_id = p_owner) AS r;
  END IF;
END`;

/**
 * `admit_operation_v2`: `admit_operation_v1`'s contract (migrations/20261202001500_create_admit_operation_v1.ts: the
 * answer, its outcomes, the rules it keeps) with the owner's capacity as one counter row (`owner_capacity`,
 * docs/design.md §4) instead of a pool of slot rows: the parameters lose the owner and running pool keys (21 instead of
 * 23); in its transaction, after the insert, one guarded `UPDATE owner_capacity SET active = active + 1 … AND active <
 * limit` (`owner_full` when it changes nothing), then the turn, then a global slot. The owner's row is created before
 * the transaction (`ensure_owner_capacity_v1`). `v1` stays for a release that still calls it (expand/contract, §9).
 */
const ADMIT_OPERATION = `CREATE PROCEDURE admit_operation_v2(
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
  IN p_global_pool VARCHAR(255) ${TEXT}
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: one admission in one round trip, owner capacity as a counter (docs/design.md, server-side routines)'
admission: BEGIN
  DECLARE v_now DATETIME(6) DEFAULT DATE_ADD(UTC_TIMESTAMP(6), INTERVAL p_clock_offset_ms * 1000 MICROSECOND);
  DECLARE v_plan VARCHAR(32) ${TEXT} DEFAULT p_default_plan;
  DECLARE v_ai INT DEFAULT p_default_ai;
  DECLARE v_privacy VARCHAR(32) ${TEXT} DEFAULT p_default_privacy;
  DECLARE v_limits VARCHAR(256) ${TEXT};
  DECLARE v_owner_limit INT;
  DECLARE v_start INT;
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

  -- A missing counter row (a new owner) and missing global slot rows (a raised limit) are created before the
  -- reserving transaction, so their creation never holds its locks.
  CALL ensure_owner_capacity_v1(p_task_type, p_owner);
  CALL ensure_capacity_pool_v1(p_global_pool, p_global_limit);

  START TRANSACTION;
  INSERT INTO operations (id, owner_user_id, task_type, idempotency_key, request_hash, subject_type, subject_id, params_json,
      privacy_mode, priority, max_attempts, status, attempt, retry_count, progress_percent,
      created_at, updated_at, available_at, deadline_at, wake_at)
    VALUES (p_id, p_owner, p_task_type, p_key, p_hash, p_subject_type, p_subject_id, p_params_json,
      v_privacy, p_priority, p_max_attempts, 'queued', 0, 0, 0,
      v_now, v_now, v_now, DATE_ADD(v_now, INTERVAL p_deadline_ms * 1000 MICROSECOND), DATE_ADD(v_now, INTERVAL p_wake_ms * 1000 MICROSECOND));
  -- The owner's counter before the turn (the lock order of lib/capacity/owner-capacity.repository.ts), so an owner at
  -- their own limit never touches the turn or the shared pool.
  UPDATE owner_capacity SET active = active + 1 WHERE task_type = p_task_type AND owner_user_id = p_owner AND active < v_owner_limit;
  IF ROW_COUNT() = 0 THEN
    ROLLBACK;
    SELECT 'owner_full' AS admission_outcome;
    LEAVE admission;
  END IF;
  INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
    VALUES (p_task_type, p_owner, v_now, '1970-01-01 00:00:00.000', p_turn_seed)
    ON DUPLICATE KEY UPDATE ready_at = LEAST(owner_turns.ready_at, VALUES(ready_at)), work_seq = owner_turns.work_seq + 1;
  ${lockOneSlot('p_global_pool', 'p_global_limit', 'v_global_slot')}
  IF v_global_slot IS NULL THEN
    ROLLBACK;
    SELECT 'global_full' AS admission_outcome;
    LEAVE admission;
  END IF;
  UPDATE capacity_slots SET operation_id = p_id, reserved_at = v_now
    WHERE pool_key = p_global_pool AND slot_no = v_global_slot AND operation_id IS NULL;
  IF ROW_COUNT() <> 1 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'admit_operation_v2: a global slot changed under its lock';
  END IF;
  COMMIT;
  SELECT 'admitted' AS admission_outcome, o.* FROM operations o WHERE o.id = p_id;
END`;

/**
 * `claim_turn_v2`: `claim_turn_v1`'s step (migrations/20261202001900_create_claim_operations_v1.ts) with the owner's
 * running limit read from its counter: `running` of the pair's `owner_capacity` row as committed (a plain read, no
 * lock), less what this claim took of it already (`p_counts`); a missing row goes to `p_incomplete` as
 * `[task type, owner]`, created by the caller outside; `LEAST(want, limit − running − taken)` rows taken, and
 * `[task type, owner, taken, limit]` appended to `p_counts` — `claim_operations_v2` raises the counters at its end, in
 * key order, guarded by the limit. No running slot rows, and no lock on the counter here.
 */
const CLAIM_TURN = `CREATE PROCEDURE claim_turn_v2(
  IN p_turn TEXT ${TEXT},
  IN p_cfg TEXT ${TEXT},
  IN p_want INT,
  IN p_now DATETIME(6),
  IN p_tokens TEXT ${TEXT},
  IN p_plans INT,
  IN p_default_plan VARCHAR(32) ${TEXT},
  INOUT p_claims INT,
  INOUT p_claimed MEDIUMTEXT ${TEXT},
  INOUT p_writes MEDIUMTEXT ${TEXT},
  INOUT p_full_routes TEXT ${TEXT},
  INOUT p_passed MEDIUMTEXT ${TEXT},
  INOUT p_incomplete TEXT ${TEXT},
  INOUT p_counts MEDIUMTEXT ${TEXT},
  IN p_raced TEXT ${TEXT},
  OUT p_got INT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: one turn of claim_operations_v2 (docs/design.md, server-side routines)'
turn: BEGIN
  DECLARE v_type VARCHAR(64) ${TEXT} DEFAULT JSON_VALUE(p_turn, '$[1]');
  DECLARE v_owner VARCHAR(128) ${TEXT} DEFAULT JSON_VALUE(p_turn, '$[2]');
  DECLARE v_seq BIGINT DEFAULT JSON_VALUE(p_turn, '$[3]');
  DECLARE v_route VARCHAR(255) ${TEXT} DEFAULT JSON_VALUE(p_cfg, '$.rk');
  DECLARE v_route_limit INT DEFAULT JSON_VALUE(p_cfg, '$.rn');
  DECLARE v_lease_ms BIGINT DEFAULT JSON_VALUE(p_cfg, '$.ms');
  DECLARE v_plan VARCHAR(32) ${TEXT} DEFAULT p_default_plan;
  DECLARE v_lane_l INT;
  DECLARE v_lane_x INT;
  DECLARE v_limit INT;
  DECLARE v_start INT;
  DECLARE v_found INT;
  DECLARE v_running INT DEFAULT NULL;
  DECLARE v_mine INT DEFAULT 0;
  DECLARE v_nslots INT;
  DECLARE v_cands MEDIUMTEXT ${TEXT} DEFAULT '[]';
  DECLARE v_n INT;
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_id CHAR(36) ${TEXT};
  DECLARE v_from VARCHAR(32) ${TEXT};
  DECLARE v_lane CHAR(1) ${TEXT};
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;

  SET p_got = 0;
  SET v_lane_l = JSON_CONTAINS(JSON_QUERY(p_cfg, '$.lanes'), '"L"') AND NOT (v_route IS NOT NULL AND JSON_CONTAINS(p_full_routes, JSON_QUOTE(v_route)));
  SET v_lane_x = JSON_CONTAINS(JSON_QUERY(p_cfg, '$.lanes'), '"X"');
  IF NOT v_lane_l AND NOT v_lane_x THEN
    LEAVE turn;
  END IF;
  IF p_plans = 1 THEN
    SELECT plan INTO v_plan FROM owner_settings WHERE owner_user_id = v_owner;
  END IF;
  SET v_limit = COALESCE(JSON_VALUE(p_cfg, CONCAT('$.lim."', v_plan, '"')), JSON_VALUE(p_cfg, '$.lim."*"'));

  -- The owner's running count as committed (a plain read: a row another transaction holds is read, never skipped or
  -- waited for), less what this claim already took of it; claim_operations_v2 raises the counter at the end, guarded.
  -- An owner whose limit an earlier try of this claim lost to another claim is passed over this time.
  IF JSON_CONTAINS(p_raced, JSON_ARRAY(JSON_OBJECT('t', v_type, 'o', v_owner))) THEN
    SET p_passed = JSON_MERGE_PRESERVE(p_passed, JSON_ARRAY(v_type));
    SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
    LEAVE turn;
  END IF;
  SELECT running INTO v_running FROM owner_capacity WHERE task_type = v_type AND owner_user_id = v_owner;
  IF v_running IS NULL THEN
    SET p_incomplete = JSON_MERGE_PRESERVE(p_incomplete, JSON_ARRAY(JSON_ARRAY(v_type, v_owner)));
    LEAVE turn;
  END IF;
  SELECT COALESCE(SUM(x.n), 0) INTO v_mine FROM JSON_TABLE(p_counts, '$[*]' COLUMNS (t VARCHAR(64) ${TEXT} PATH '$[0]',
    o VARCHAR(128) ${TEXT} PATH '$[1]', n INT PATH '$[2]')) AS x WHERE x.t = v_type AND x.o = v_owner;
  SET v_nslots = LEAST(p_want, v_limit - v_running - v_mine);
  IF v_nslots <= 0 THEN
    SET p_passed = JSON_MERGE_PRESERVE(p_passed, JSON_ARRAY(v_type));
    SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
    LEAVE turn;
  END IF;

  IF v_lane_l THEN ${LANE_CANDIDATES('L')}
  END IF;
  IF v_lane_x THEN ${LANE_CANDIDATES('X')}
  END IF;
  SET v_n = JSON_LENGTH(v_cands);
  IF v_n = 0 THEN
    -- Only a claimer that serves every lane of the task type knows the turn has nothing due, and retires it; one that
    -- serves some lanes sends it to the back (served), so turns it cannot retire never pin the front against p_max_turns.
    IF v_lane_l + v_lane_x = JSON_VALUE(p_cfg, '$.all') THEN
      SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'R', v_seq)));
    ELSE
      SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
    END IF;
    LEAVE turn;
  END IF;
  -- Claim order within the owner: priority, then oldest; exact ties lane L first, then the smaller id.
  SELECT JSON_ARRAYAGG(JSON_ARRAY(id, st, lane) ORDER BY pr DESC, av, lane, id) INTO v_cands
    FROM JSON_TABLE(v_cands, '$[*]' COLUMNS (id CHAR(36) ${TEXT} PATH '$[0]', st VARCHAR(32) ${TEXT} PATH '$[1]', pr INT PATH '$[2]',
      av VARCHAR(32) ${TEXT} PATH '$[3]', lane CHAR(1) ${TEXT} PATH '$[4]')) AS c;

  rows_loop: WHILE v_i < v_n AND v_i < v_nslots DO
    SET v_id = JSON_VALUE(v_cands, CONCAT('$[', v_i, '][0]'));
    SET v_from = JSON_VALUE(v_cands, CONCAT('$[', v_i, '][1]'));
    SET v_lane = JSON_VALUE(v_cands, CONCAT('$[', v_i, '][2]'));
    SET v_i = v_i + 1;
    IF v_lane = 'L' AND v_route IS NOT NULL THEN
      -- A row of a route set aside earlier in this claim waits, as it would for the next claimer.
      IF JSON_CONTAINS(p_full_routes, JSON_QUOTE(v_route)) THEN
        ITERATE rows_loop;
      END IF;
      SET v_found = NULL;
      ${lockOneSlot('v_route', 'v_route_limit', 'v_found')}
      IF v_found IS NULL THEN
        SET p_full_routes = JSON_MERGE_PRESERVE(p_full_routes, JSON_ARRAY(v_route));
        ITERATE rows_loop;
      END IF;
      UPDATE capacity_slots SET operation_id = v_id, reserved_at = p_now WHERE pool_key = v_route AND slot_no = v_found AND operation_id IS NULL;
      IF ROW_COUNT() <> 1 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim_turn_v2: a route slot changed under its lock';
      END IF;
    END IF;
    UPDATE operations SET status = 'running', attempt = attempt + 1,
        lease_token = JSON_VALUE(p_tokens, CONCAT('$[', p_claims, ']')),
        lease_expires_at = DATE_ADD(p_now, INTERVAL v_lease_ms * 1000 MICROSECOND),
        heartbeat_at = p_now, started_at = COALESCE(started_at, p_now), progress_percent = 0, progress_stage = NULL,
        available_at = NULL, wake_at = NULL, updated_at = p_now
      WHERE id = v_id AND status = v_from;
    IF ROW_COUNT() <> 1 THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim_turn_v2: a locked candidate changed under its lock';
    END IF;
    SET p_claimed = JSON_MERGE_PRESERVE(p_claimed, JSON_ARRAY(JSON_ARRAY(v_id, v_from, v_lease_ms)));
    SET p_claims = p_claims + 1, p_got = p_got + 1;
  END WHILE;
  IF p_got > 0 THEN
    SET p_counts = JSON_MERGE_PRESERVE(p_counts, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, p_got, v_limit)));
    SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
  END IF;
END`;

/**
 * `claim_operations_v2`: `claim_operations_v1`'s contract (the same parameters, order, bounds and answer; `p_config`
 * without `rp`) serving each turn with `claim_turn_v2`; its second result set is `passed_over` and `incomplete_pairs`
 * (JSON `[[task type, owner]…]`, pairs without their counter row). Before the turn writes it raises the running
 * counter of each owner it took work from, in key order, with one guarded UPDATE each (`running <= limit − taken`;
 * it waits for a row another transaction holds); a guard that fails — another claim took that owner's room since this
 * one read it — signals `claim_operations_v2: a running limit was taken by another claim: <task type> / <owner>`
 * (SQLSTATE 45000, all rolled back; the caller runs the claim again with that owner in `p_raced`, JSON
 * `[{"t": task type, "o": owner}…]` (objects: `JSON_CONTAINS` matches them field by field, exactly), whose turns are passed over — `RUNNING_LIMIT_RACED` in lib/operations/lease/fair-claim.ts). `v1` stays for a release that still calls it.
 */
const CLAIM_OPERATIONS = `CREATE PROCEDURE claim_operations_v2(
  IN p_max INT,
  IN p_config TEXT ${TEXT},
  IN p_tokens TEXT ${TEXT},
  IN p_plans INT,
  IN p_default_plan VARCHAR(32) ${TEXT},
  IN p_clock_offset_ms BIGINT,
  IN p_max_turns INT,
  IN p_raced TEXT ${TEXT}
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: a claim group in one round trip (docs/design.md, server-side routines)'
claim: BEGIN
  DECLARE v_now DATETIME(6) DEFAULT DATE_ADD(UTC_TIMESTAMP(6), INTERVAL p_clock_offset_ms * 1000 MICROSECOND);
  DECLARE v_claims INT DEFAULT 0;
  DECLARE v_claimed MEDIUMTEXT ${TEXT} DEFAULT '[]';
  DECLARE v_writes MEDIUMTEXT ${TEXT} DEFAULT '[]';
  DECLARE v_full_routes TEXT ${TEXT} DEFAULT '[]';
  DECLARE v_passed MEDIUMTEXT ${TEXT} DEFAULT '[]';
  DECLARE v_incomplete TEXT ${TEXT} DEFAULT '[]';
  DECLARE v_counts MEDIUMTEXT ${TEXT} DEFAULT '[]';
  DECLARE v_raced_message VARCHAR(512) ${TEXT};
  DECLARE v_tier INT DEFAULT 0;
  DECLARE v_tier_cfg TEXT ${TEXT};
  DECLARE v_cfg TEXT ${TEXT};
  DECLARE v_cursors TEXT ${TEXT};
  DECLARE v_exhausted TEXT ${TEXT};
  DECLARE v_page MEDIUMTEXT ${TEXT};
  DECLARE v_type_page MEDIUMTEXT ${TEXT};
  DECLARE v_pending MEDIUMTEXT ${TEXT};
  DECLARE v_again MEDIUMTEXT ${TEXT};
  DECLARE v_turn TEXT ${TEXT};
  DECLARE v_type VARCHAR(64) ${TEXT};
  DECLARE v_route VARCHAR(255) ${TEXT};
  DECLARE v_after_s DATETIME(6);
  DECLARE v_after_o VARCHAR(128) ${TEXT};
  DECLARE v_j INT;
  DECLARE v_i INT;
  DECLARE v_n INT;
  DECLARE v_share INT;
  DECLARE v_want INT;
  DECLARE v_got INT;
  DECLARE v_next DATETIME(6);
  DECLARE v_turns_read INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    RESIGNAL;
  END;

  START TRANSACTION;
  tiers: WHILE v_tier < JSON_LENGTH(p_config) AND v_claims < p_max DO
    SET v_tier_cfg = JSON_QUERY(p_config, CONCAT('$[', v_tier, ']'));
    SET v_cursors = '{}', v_exhausted = '[]';
    pages: WHILE v_claims < p_max AND v_turns_read < p_max_turns DO
      SET v_page = '[]', v_j = 0;
      WHILE v_j < JSON_LENGTH(v_tier_cfg) DO
        SET v_cfg = JSON_QUERY(v_tier_cfg, CONCAT('$[', v_j, ']'));
        SET v_type = JSON_VALUE(v_cfg, '$.t'), v_route = JSON_VALUE(v_cfg, '$.rk');
        -- A task type whose lanes are all set aside (its route is full) is not read again in this claim.
        IF NOT JSON_CONTAINS(v_exhausted, CAST(v_j AS CHAR))
           AND (JSON_CONTAINS(JSON_QUERY(v_cfg, '$.lanes'), '"X"')
             OR (JSON_CONTAINS(JSON_QUERY(v_cfg, '$.lanes'), '"L"') AND NOT (v_route IS NOT NULL AND JSON_CONTAINS(v_full_routes, JSON_QUOTE(v_route))))) THEN
          SET v_after_s = JSON_VALUE(v_cursors, CONCAT('$."', v_j, '"[0]')), v_after_o = JSON_VALUE(v_cursors, CONCAT('$."', v_j, '"[1]'));
          IF v_after_s IS NULL THEN
            SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(served_at, task_type, owner_user_id, work_seq, v_j) ORDER BY served_at, owner_user_id), '[]'), COUNT(*)
              INTO v_type_page, v_n
              FROM (SELECT served_at, task_type, owner_user_id, work_seq FROM owner_turns FORCE INDEX (owner_turns_type_turn_idx)
                WHERE task_type = v_type AND ready_at <= v_now ORDER BY served_at, owner_user_id LIMIT 32) AS page;
          ELSE
            SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(served_at, task_type, owner_user_id, work_seq, v_j) ORDER BY served_at, owner_user_id), '[]'), COUNT(*)
              INTO v_type_page, v_n
              FROM (SELECT served_at, task_type, owner_user_id, work_seq FROM owner_turns FORCE INDEX (owner_turns_type_turn_idx)
                WHERE task_type = v_type AND ready_at <= v_now AND (served_at > v_after_s OR (served_at = v_after_s AND owner_user_id > v_after_o))
                ORDER BY served_at, owner_user_id LIMIT 32) AS page;
          END IF;
          IF v_n < 32 THEN
            SET v_exhausted = JSON_MERGE_PRESERVE(v_exhausted, JSON_ARRAY(v_j));
          END IF;
          IF v_n > 0 THEN
            SET v_cursors = JSON_SET(v_cursors, CONCAT('$."', v_j, '"'),
              JSON_ARRAY(JSON_VALUE(v_type_page, CONCAT('$[', v_n - 1, '][0]')), JSON_VALUE(v_type_page, CONCAT('$[', v_n - 1, '][2]'))));
            SET v_page = JSON_MERGE_PRESERVE(v_page, v_type_page);
          END IF;
        END IF;
        SET v_j = v_j + 1;
      END WHILE;
      IF JSON_LENGTH(v_page) = 0 THEN
        LEAVE pages;
      END IF;
      SET v_turns_read = v_turns_read + JSON_LENGTH(v_page);
      -- Turn order: least recently served first, then task type, then owner.
      SELECT JSON_ARRAYAGG(JSON_ARRAY(s, t, o, w, j) ORDER BY s, t, o) INTO v_pending FROM ${TURNS('v_page')} AS turns;
      WHILE JSON_LENGTH(v_pending) > 0 AND v_claims < p_max DO
        SET v_share = CEIL((p_max - v_claims) / JSON_LENGTH(v_pending));
        SET v_again = '[]', v_i = 0;
        turns: WHILE v_i < JSON_LENGTH(v_pending) DO
          SET v_want = LEAST(v_share, p_max - v_claims);
          IF v_want <= 0 THEN
            LEAVE turns;
          END IF;
          SET v_turn = JSON_QUERY(v_pending, CONCAT('$[', v_i, ']'));
          CALL claim_turn_v2(v_turn, JSON_QUERY(v_tier_cfg, CONCAT('$[', JSON_VALUE(v_turn, '$[4]'), ']')), v_want, v_now, p_tokens, p_plans,
            p_default_plan, v_claims, v_claimed, v_writes, v_full_routes, v_passed, v_incomplete, v_counts, p_raced, v_got);
          IF v_got = v_want THEN
            SET v_again = JSON_MERGE_PRESERVE(v_again, CONCAT('[', v_turn, ']'));
          END IF;
          SET v_i = v_i + 1;
        END WHILE;
        SET v_pending = v_again;
      END WHILE;
    END WHILE;
    SET v_tier = v_tier + 1;
  END WHILE;

  -- The running counters of the owners taken from, in key order and before the turns (the lock order of
  -- lib/capacity/owner-capacity.repository.ts), each guarded by its limit: another claim that took the room since this
  -- one read it makes the whole claim roll back (the caller runs it again).
  SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(t, o, n, l) ORDER BY t, o), '[]') INTO v_counts
    FROM (SELECT t, o, SUM(n) AS n, MIN(l) AS l FROM JSON_TABLE(v_counts, '$[*]' COLUMNS (t VARCHAR(64) ${TEXT} PATH '$[0]',
      o VARCHAR(128) ${TEXT} PATH '$[1]', n INT PATH '$[2]', l INT PATH '$[3]')) AS x GROUP BY t, o) AS y;
  SET v_i = 0;
  WHILE v_i < JSON_LENGTH(v_counts) DO
    SET v_n = JSON_VALUE(v_counts, CONCAT('$[', v_i, '][2]'));
    UPDATE owner_capacity SET running = running + v_n
      WHERE task_type = JSON_VALUE(v_counts, CONCAT('$[', v_i, '][0]')) AND owner_user_id = JSON_VALUE(v_counts, CONCAT('$[', v_i, '][1]'))
        AND running <= JSON_VALUE(v_counts, CONCAT('$[', v_i, '][3]')) - v_n;
    IF ROW_COUNT() <> 1 THEN
      SET v_raced_message = LEFT(CONCAT('claim_operations_v2: a running limit was taken by another claim: ',
        JSON_VALUE(v_counts, CONCAT('$[', v_i, '][0]')), ' / ', JSON_VALUE(v_counts, CONCAT('$[', v_i, '][1]'))), 512);
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_raced_message;
    END IF;
    SET v_i = v_i + 1;
  END WHILE;

  -- The turn rows touched, one statement each in key order (concurrent claimers lock them in one order); a turn served
  -- and also found empty in this claim counts as served.
  SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(t, o, k, w) ORDER BY t, o), '[]') INTO v_writes
    FROM (SELECT t, o, MAX(k) AS k, MAX(w) AS w FROM JSON_TABLE(v_writes, '$[*]' COLUMNS (t VARCHAR(64) ${TEXT} PATH '$[0]',
      o VARCHAR(128) ${TEXT} PATH '$[1]', k CHAR(1) ${TEXT} PATH '$[2]', w BIGINT PATH '$[3]')) AS x GROUP BY t, o) AS y;
  SET v_i = 0;
  WHILE v_i < JSON_LENGTH(v_writes) DO
    SET v_type = JSON_VALUE(v_writes, CONCAT('$[', v_i, '][0]')), v_after_o = JSON_VALUE(v_writes, CONCAT('$[', v_i, '][1]'));
    IF JSON_VALUE(v_writes, CONCAT('$[', v_i, '][2]')) = 'S' THEN
      UPDATE owner_turns SET served_at = v_now WHERE task_type = v_type AND owner_user_id = v_after_o;
    ELSE
      SELECT MIN(available_at) INTO v_next FROM operations
        WHERE claim_lane IN ('L', 'X') AND task_type = v_type AND owner_user_id = v_after_o AND deadline_at > v_now;
      IF v_next IS NULL THEN
        DELETE FROM owner_turns WHERE task_type = v_type AND owner_user_id = v_after_o AND work_seq = JSON_VALUE(v_writes, CONCAT('$[', v_i, '][3]'));
      ELSE
        UPDATE owner_turns SET ready_at = v_next
          WHERE task_type = v_type AND owner_user_id = v_after_o AND work_seq = JSON_VALUE(v_writes, CONCAT('$[', v_i, '][3]'));
      END IF;
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
  COMMIT;

  -- Read after the commit, so the worker's pre-run rechecks (a cancel requested meanwhile, the owner's live settings)
  -- need no read of their own.
  SELECT o.id, o.owner_user_id, o.lease_token, o.task_type, o.attempt, o.max_attempts, o.params_json, c.ms AS lease_ms, c.from_status,
      o.privacy_mode, o.subject_type, o.subject_id, o.status, o.cancel_requested_at,
      s.plan AS owner_plan, s.ai_enabled AS owner_ai_enabled, s.privacy_mode AS owner_privacy_mode
    FROM JSON_TABLE(v_claimed, '$[*]' COLUMNS (ord FOR ORDINALITY, id CHAR(36) ${TEXT} PATH '$[0]', from_status VARCHAR(32) ${TEXT} PATH '$[1]',
      ms BIGINT PATH '$[2]')) AS c
    STRAIGHT_JOIN operations o FORCE INDEX (PRIMARY) ON o.id = c.id
    LEFT JOIN owner_settings s ON s.owner_user_id = o.owner_user_id
    ORDER BY c.ord;
  SELECT v_passed AS passed_over, v_incomplete AS incomplete_pairs;
END`;

/** Admission and the claim group with per-owner capacity as a counter row, as server-side routines; SQLite runs the same from TypeScript. */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql.raw(ENSURE_OWNER).execute(db);
  await sql.raw(ADMIT_OPERATION).execute(db);
  await sql.raw(CLAIM_TURN).execute(db);
  await sql.raw(CLAIM_OPERATIONS).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS claim_operations_v2`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS claim_turn_v2`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS admit_operation_v2`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS ensure_owner_capacity_v1`.execute(db);
}
