import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

/** Text compares like the columns it is matched with (the schema's binary, no-pad collation). */
const TEXT = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin';

/** Turns (`[served_at, task_type, owner, work_seq, type index]`) of a JSON array, as rows. */
const TURNS = (source: string) => `JSON_TABLE(${source}, '$[*]' COLUMNS (
      s VARCHAR(32) ${TEXT} PATH '$[0]', t VARCHAR(64) ${TEXT} PATH '$[1]', o VARCHAR(128) ${TEXT} PATH '$[2]',
      w BIGINT PATH '$[3]', j INT PATH '$[4]'))`;

/**
 * One slot of a pool locked `FOR UPDATE SKIP LOCKED` from a random start, wrapping once — the search `lockFreeSlots`
 * makes in-process (lib/capacity/capacity.ts). Expects `v_start`, and `v_found` NULL; leaves the slot in `v_found`.
 */
const LOCK_ONE_SLOT = (pool: string, limit: string) => `
    SELECT slot_no INTO v_found FROM capacity_slots FORCE INDEX (PRIMARY)
      WHERE pool_key = ${pool} AND operation_id IS NULL AND slot_no >= v_start AND slot_no < ${limit}
      ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF v_found IS NULL AND v_start > 0 THEN
      SELECT slot_no INTO v_found FROM capacity_slots FORCE INDEX (PRIMARY)
        WHERE pool_key = ${pool} AND operation_id IS NULL AND slot_no >= 0 AND slot_no < v_start
        ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED;
    END IF;`;

/** One lane's best due rows of the owner (`[id, status, priority, available_at, lane]`), locked, appended to `v_cands`. */
const LANE_CANDIDATES = (lane: 'L' | 'X') => `
    SELECT JSON_MERGE_PRESERVE(v_cands, COALESCE(JSON_ARRAYAGG(JSON_ARRAY(id, status, priority, available_at, '${lane}')), '[]')) INTO v_cands
      FROM (SELECT id, status, priority, available_at FROM operations FORCE INDEX (operations_owner_claim_idx)
        WHERE claim_lane = '${lane}' AND task_type = v_type AND owner_user_id = v_owner AND available_at <= p_now AND deadline_at > p_now
        ORDER BY priority DESC, available_at ASC LIMIT v_nslots FOR UPDATE SKIP LOCKED) AS due;`;

/**
 * `claim_turn_v1`: serves one turn of a claim (called only by `claim_operations_v1`, inside its transaction) — the
 * `serve` step of lib/operations/lease/fair-claim.ts: up to `p_want` of the owner's due rows of the task type, within
 * its running limit (free `running:<type>:<owner>` slots, `SKIP LOCKED`), each given a running slot, a route slot on a
 * limited route (a full route is set aside for the rest of the claim), a lease token from `p_tokens` and moved to
 * `running` at once (so a later read of this claim does not see it again). Records what `finish` writes: the turn
 * served (`S`), passed over at its limit (`S`, and its type in `p_passed`), or retired — nothing due on every lane of
 * the type (`R`); a running pool lacking its rows goes to `p_incomplete` (the caller completes it, outside).
 */
const CLAIM_TURN = `CREATE PROCEDURE claim_turn_v1(
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
  OUT p_got INT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'durable-ops: one turn of claim_operations_v1 (docs/design.md, server-side routines)'
turn: BEGIN
  DECLARE v_type VARCHAR(64) ${TEXT} DEFAULT JSON_VALUE(p_turn, '$[1]');
  DECLARE v_owner VARCHAR(128) ${TEXT} DEFAULT JSON_VALUE(p_turn, '$[2]');
  DECLARE v_seq BIGINT DEFAULT JSON_VALUE(p_turn, '$[3]');
  DECLARE v_route VARCHAR(255) ${TEXT} DEFAULT JSON_VALUE(p_cfg, '$.rk');
  DECLARE v_route_limit INT DEFAULT JSON_VALUE(p_cfg, '$.rn');
  DECLARE v_lease_ms BIGINT DEFAULT JSON_VALUE(p_cfg, '$.ms');
  DECLARE v_pool VARCHAR(255) ${TEXT} DEFAULT CONCAT(JSON_VALUE(p_cfg, '$.rp'), v_owner);
  DECLARE v_plan VARCHAR(32) ${TEXT} DEFAULT p_default_plan;
  DECLARE v_lane_l INT;
  DECLARE v_lane_x INT;
  DECLARE v_limit INT;
  DECLARE v_start INT;
  DECLARE v_rest INT;
  DECLARE v_found INT;
  DECLARE v_slots TEXT ${TEXT} DEFAULT '[]';
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

  -- The owner's free running slots, from a random start, wrapping.
  SET v_start = FLOOR(RAND() * v_limit);
  SELECT COALESCE(JSON_ARRAYAGG(slot_no), '[]') INTO v_slots FROM (SELECT slot_no FROM capacity_slots FORCE INDEX (PRIMARY)
    WHERE pool_key = v_pool AND operation_id IS NULL AND slot_no >= v_start AND slot_no < v_limit
    ORDER BY slot_no LIMIT p_want FOR UPDATE SKIP LOCKED) AS free;
  SET v_rest = p_want - JSON_LENGTH(v_slots);
  IF v_rest > 0 AND v_start > 0 THEN
    SELECT JSON_MERGE_PRESERVE(v_slots, COALESCE(JSON_ARRAYAGG(slot_no), '[]')) INTO v_slots FROM (SELECT slot_no FROM capacity_slots FORCE INDEX (PRIMARY)
      WHERE pool_key = v_pool AND operation_id IS NULL AND slot_no >= 0 AND slot_no < v_start
      ORDER BY slot_no LIMIT v_rest FOR UPDATE SKIP LOCKED) AS free;
  END IF;
  SET v_nslots = JSON_LENGTH(v_slots);
  IF v_nslots = 0 THEN
    IF NOT EXISTS (SELECT 1 FROM capacity_slots WHERE pool_key = v_pool AND slot_no = v_limit - 1) THEN
      SET p_incomplete = JSON_MERGE_PRESERVE(p_incomplete, JSON_ARRAY(JSON_ARRAY(v_pool, v_limit)));
    ELSE
      SET p_passed = JSON_MERGE_PRESERVE(p_passed, JSON_ARRAY(v_type));
      SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
    END IF;
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
      SET v_start = FLOOR(RAND() * v_route_limit), v_found = NULL;${LOCK_ONE_SLOT('v_route', 'v_route_limit')}
      IF v_found IS NULL THEN
        SET p_full_routes = JSON_MERGE_PRESERVE(p_full_routes, JSON_ARRAY(v_route));
        ITERATE rows_loop;
      END IF;
      UPDATE capacity_slots SET operation_id = v_id, reserved_at = p_now WHERE pool_key = v_route AND slot_no = v_found AND operation_id IS NULL;
      IF ROW_COUNT() <> 1 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim_turn_v1: a route slot changed under its lock';
      END IF;
    END IF;
    UPDATE capacity_slots SET operation_id = v_id, reserved_at = p_now
      WHERE pool_key = v_pool AND slot_no = JSON_VALUE(v_slots, CONCAT('$[', p_got, ']')) AND operation_id IS NULL;
    IF ROW_COUNT() <> 1 THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim_turn_v1: a running slot changed under its lock';
    END IF;
    UPDATE operations SET status = 'running', attempt = attempt + 1,
        lease_token = JSON_VALUE(p_tokens, CONCAT('$[', p_claims, ']')),
        lease_expires_at = DATE_ADD(p_now, INTERVAL v_lease_ms * 1000 MICROSECOND),
        heartbeat_at = p_now, started_at = COALESCE(started_at, p_now), progress_percent = 0, progress_stage = NULL,
        available_at = NULL, wake_at = NULL, updated_at = p_now
      WHERE id = v_id AND status = v_from;
    IF ROW_COUNT() <> 1 THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim_turn_v1: a locked candidate changed under its lock';
    END IF;
    SET p_claimed = JSON_MERGE_PRESERVE(p_claimed, JSON_ARRAY(JSON_ARRAY(v_id, v_from, v_lease_ms)));
    SET p_claims = p_claims + 1, p_got = p_got + 1;
  END WHILE;
  IF p_got > 0 THEN
    SET p_writes = JSON_MERGE_PRESERVE(p_writes, JSON_ARRAY(JSON_ARRAY(v_type, v_owner, 'S', v_seq)));
  END IF;
END`;

/**
 * `claim_operations_v1(max, config, tokens, plans, default plan, clock offset ms, max turns)`: a claim group — up to `max`
 * operations in the fair claim order — in one round trip on MariaDB (docs/design.md §4 "Fair share", §9; the caller
 * and the SQLite implementation of the same decision are `claimUpTo` in lib/operations/lease/claim-operation.ts and
 * `FairClaim` in fair-claim.ts, whose TSDoc gives the order and the bounds this routine keeps).
 *
 * `p_config` (JSON, built by `claim-procedure.repository.ts`): the claimer's task types as priority tiers, highest
 * first, each `{t, lanes: ["L"|"X"…], all: lanes of the type, ms: lease ms, rk/rn: route pool and limit (lane L) or
 * null, rp: running pool key prefix, lim: {"<plan>": running limit, "*": …}}`; `p_tokens`: `max` fresh lease tokens.
 * In one transaction, per tier: pages of 32 ready turns per task type (`owner_turns_type_turn_idx`), merged in turn
 * order, until `p_max_turns` turns have been read in all (`MAX_TURNS_PER_CLAIM`); the turns share the claims (⌈remaining / turns⌉ each, again for those that took their whole share);
 * `claim_turn_v1` serves each. At the end the turn rows it touched are written in key order: served → `served_at = now`,
 * retired → `ready_at` to the next due time or deleted, guarded by `work_seq`. Answers two result sets: the claimed
 * rows (`id, owner_user_id, lease_token, task_type, attempt, max_attempts, params_json, lease_ms, from_status,
 * privacy_mode, subject_type, subject_id`, in claim order, with what a read right after the commit sees — `status`,
 * `cancel_requested_at` and the owner's live settings `owner_plan, owner_ai_enabled, owner_privacy_mode`, NULL for an
 * owner without a row — which the worker's pre-run rechecks use instead of reading again), then one row `passed_over` (JSON: a task type per turn passed
 * over at its limit) and `incomplete_pools` (JSON `[[pool, limit]…]`, running pools lacking rows). Any error rolls back
 * and is re-raised.
 *
 * `SQL SECURITY INVOKER`, no user variables, prepared statements, temporary tables or session changes (RDS Proxy does
 * not pin a `CALL`). Never changed in place: a new contract is a new name (expand/contract).
 */
const CLAIM_OPERATIONS = `CREATE PROCEDURE claim_operations_v1(
  IN p_max INT,
  IN p_config TEXT ${TEXT},
  IN p_tokens TEXT ${TEXT},
  IN p_plans INT,
  IN p_default_plan VARCHAR(32) ${TEXT},
  IN p_clock_offset_ms BIGINT,
  IN p_max_turns INT
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
          CALL claim_turn_v1(v_turn, JSON_QUERY(v_tier_cfg, CONCAT('$[', JSON_VALUE(v_turn, '$[4]'), ']')), v_want, v_now, p_tokens, p_plans,
            p_default_plan, v_claims, v_claimed, v_writes, v_full_routes, v_passed, v_incomplete, v_got);
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
  SELECT v_passed AS passed_over, v_incomplete AS incomplete_pools;
END`;

/**
 * The claim group as server-side routines (see {@link CLAIM_OPERATIONS} and {@link CLAIM_TURN}). SQLite has no stored
 * routines; its claim runs the same steps from TypeScript (up() does nothing there).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql.raw(CLAIM_TURN).execute(db);
  await sql.raw(CLAIM_OPERATIONS).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS claim_operations_v1`.execute(db);
  await sql`DROP PROCEDURE IF EXISTS claim_turn_v1`.execute(db);
}
