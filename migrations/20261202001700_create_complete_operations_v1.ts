import { sql, type Kysely } from 'kysely';
import { columnTypes } from './column-types.js';

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

/**
 * `complete_operations_v1(leases, wait for locks 0|1, clock offset ms)`: a completion group — `running → succeeded` for several leases —
 * in one round trip on MariaDB (docs/design.md §9; the caller and the SQLite implementation of the same decision are
 * `completeTogether` in lib/operations/lease/lease-operations.ts and `complete-procedure.repository.ts`).
 *
 * In one transaction: locks the listed operations whose lease holds (`status = 'running'`, same owner and token,
 * `lease_expires_at` after now) with `FOR UPDATE SKIP LOCKED` — a row another transaction holds is left out, never
 * waited for (a group: that completion goes alone) — or, with `p_wait_for_locks` 1 (a completion alone), `FOR UPDATE`,
 * waiting for the row as the in-process guarded UPDATE does, so a row briefly locked by an owner's cancel request is
 * never mistaken for a lost lease; moves exactly those to `succeeded` (the `complete` move of the transition table: lease cleared,
 * `finished_at` now, `available_at` / `wake_at` cleared, failure cleared, progress 100), writes one terminal
 * notification each and frees every capacity slot they hold — the consequences `move` writes in-process. Answers one
 * result set, one row: `completion_outcome` `completed` with `held` (JSON array of the ids it completed, possibly
 * empty) and `due` (those of them whose owner still has a due operation of the task type — read after the commit,
 * one range of `operations_owner_claim_idx` each: the probe the worker makes in-process, `hasDueOperation`), or `lapsed` (fewer rows updated than locked — unreachable while both statements use the one `now`, kept as
 * the guard the in-process path has: everything rolled back; the caller completes each alone). Any error rolls back and is re-raised.
 *
 * Reads go from the JSON list to the rows by primary key (`STRAIGHT_JOIN`, `FORCE INDEX`): O(group), whatever the
 * table holds. `SQL SECURITY INVOKER`, no user variables, prepared statements, temporary tables or session changes
 * (RDS Proxy does not pin a `CALL`). Never changed in place: a new contract is a new name (expand/contract).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql
    .raw(
      `CREATE PROCEDURE complete_operations_v1(
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
END`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!columnTypes(db).mariadb) return;
  await sql`DROP PROCEDURE IF EXISTS complete_operations_v1`.execute(db);
}
