import { sql, type Kysely } from 'kysely';

/**
 * The harness's own tables, created next to the library's schema in the chaos database (MariaDB only), never part of
 * the library's migrations:
 *
 * - `chaos_effects`: the side-effect log. The chaos task writes one row per successful run, keyed by operation, cycle
 *   and attempt, inside the transaction that marks the operation `succeeded` (`TaskCompletion.publish`), so a row
 *   exists if and only if that attempt's success committed. No unique key: a second effect must be visible, not
 *   prevented.
 * - `chaos_executions`: one row per run of the handler, written when it starts, outside any transaction — how often
 *   work was executed (at least once per claim by design), as opposed to committed.
 * - `chaos_transitions`: every change of an operation's status, attempt, cycle or lease token (`kind = 'status'`, with
 *   the new failure message) and every progress write (`kind = 'progress'`, with the new stage), in commit order per
 *   row, recorded by triggers on `operations` (the Jepsen-style history the checker reads). The chaos task stamps its
 *   progress stages and failure messages with its cycle and attempt (`c<cycle>a<attempt>`), so a write by an attempt
 *   that no longer holds the lease shows as a stamp that differs from the row's attempt at that moment. Heartbeats
 *   that only move `lease_expires_at` are not recorded. Each row also has `at`, when the write ran on the database
 *   clock (`NEW.updated_at`: every write of the lifecycle module sets it to its statement's now, as
 *   `operation_events.at` records it), and `from_lease_expires_at`, the lease end the row had just before the write
 *   (`OLD.lease_expires_at`): on the write that ends an attempt's lease — the sweeper's expiry, the attempt's own
 *   completion, failure or cancel, or a claim — the earlier of the two is the moment that lease ended, which the row
 *   itself forgets (the checker's `noCallAfterLeaseEnd`).
 * @throws driver errors (the database must be MariaDB and allow `CREATE TRIGGER`).
 */
export async function createChaosSchema(db: Kysely<any>): Promise<void> {
  await sql`CREATE TABLE IF NOT EXISTS chaos_effects (
      id BIGINT AUTO_INCREMENT PRIMARY KEY,
      operation_id CHAR(36) NOT NULL,
      cycle INT NOT NULL,
      attempt INT NOT NULL,
      worker VARCHAR(64) NOT NULL,
      KEY chaos_effects_operation (operation_id, cycle, attempt)
    ) ENGINE=InnoDB`.execute(db);
  await sql`CREATE TABLE IF NOT EXISTS chaos_executions (
      id BIGINT AUTO_INCREMENT PRIMARY KEY,
      operation_id CHAR(36) NOT NULL,
      cycle INT NOT NULL,
      attempt INT NOT NULL,
      worker VARCHAR(64) NOT NULL,
      KEY chaos_executions_operation (operation_id, cycle, attempt)
    ) ENGINE=InnoDB`.execute(db);
  await sql`CREATE TABLE IF NOT EXISTS chaos_transitions (
      seq BIGINT AUTO_INCREMENT PRIMARY KEY,
      operation_id CHAR(36) NOT NULL,
      kind VARCHAR(8) NOT NULL,
      from_status VARCHAR(32) NULL,
      to_status VARCHAR(32) NOT NULL,
      from_attempt INT NULL,
      to_attempt INT NOT NULL,
      from_cycle INT NULL,
      to_cycle INT NOT NULL,
      lease_changed TINYINT NOT NULL,
      note VARCHAR(512) NULL,
      at DATETIME(6) NOT NULL,
      from_lease_expires_at DATETIME(6) NULL,
      KEY chaos_transitions_operation (operation_id, seq)
    ) ENGINE=InnoDB`.execute(db);
  await sql`DROP TRIGGER IF EXISTS chaos_operations_inserted`.execute(db);
  await sql`CREATE TRIGGER chaos_operations_inserted AFTER INSERT ON operations FOR EACH ROW
      INSERT INTO chaos_transitions (operation_id, kind, from_status, to_status, from_attempt, to_attempt, from_cycle, to_cycle, lease_changed, note, at, from_lease_expires_at)
      VALUES (NEW.id, 'status', NULL, NEW.status, NULL, NEW.attempt, NULL, NEW.retry_count, NEW.lease_token IS NOT NULL, NULL, NEW.updated_at, NULL)`.execute(db);
  await sql`DROP TRIGGER IF EXISTS chaos_operations_updated`.execute(db);
  await sql`CREATE TRIGGER chaos_operations_updated AFTER UPDATE ON operations FOR EACH ROW
      IF NOT (OLD.status <=> NEW.status) OR NOT (OLD.attempt <=> NEW.attempt) OR NOT (OLD.retry_count <=> NEW.retry_count)
          OR NOT (OLD.lease_token <=> NEW.lease_token) THEN
        INSERT INTO chaos_transitions (operation_id, kind, from_status, to_status, from_attempt, to_attempt, from_cycle, to_cycle, lease_changed, note, at, from_lease_expires_at)
        VALUES (NEW.id, 'status', OLD.status, NEW.status, OLD.attempt, NEW.attempt, OLD.retry_count, NEW.retry_count,
                NOT (OLD.lease_token <=> NEW.lease_token), NEW.failure_message, NEW.updated_at, OLD.lease_expires_at);
      ELSEIF NOT (OLD.progress_stage <=> NEW.progress_stage) THEN
        INSERT INTO chaos_transitions (operation_id, kind, from_status, to_status, from_attempt, to_attempt, from_cycle, to_cycle, lease_changed, note, at, from_lease_expires_at)
        VALUES (NEW.id, 'progress', OLD.status, NEW.status, OLD.attempt, NEW.attempt, OLD.retry_count, NEW.retry_count, 0, NEW.progress_stage,
                NEW.updated_at, OLD.lease_expires_at);
      END IF`.execute(db);
}

/** Which run of an operation: its owner-retry cycle (`retry_count`) and 1-based attempt within the cycle. */
export interface RunKey {
  readonly operationId: string;
  readonly cycle: number;
  readonly attempt: number;
  /** The process, e.g. `worker-3#2` (slot and incarnation). */
  readonly worker: string;
}

/** Writes one effect row in the caller's transaction (the success transaction of a chaos run). */
export async function insertEffect(tx: Kysely<any>, run: RunKey): Promise<void> {
  await tx.insertInto('chaos_effects').values({ operation_id: run.operationId, cycle: run.cycle, attempt: run.attempt, worker: run.worker }).execute();
}

/** Records that a run started (its own statement, outside any transaction). */
export async function insertExecution(db: Kysely<any>, run: RunKey): Promise<void> {
  await db.insertInto('chaos_executions').values({ operation_id: run.operationId, cycle: run.cycle, attempt: run.attempt, worker: run.worker }).execute();
}

/** The owner-retry cycle (`retry_count`) an operation is in now. @throws {Error} when the operation does not exist. */
export async function currentCycle(db: Kysely<any>, operationId: string): Promise<number> {
  const row = await db.selectFrom('operations').select('retry_count').where('id', '=', operationId).executeTakeFirst();
  if (!row) throw new Error(`operation ${operationId} not found`);
  return Number(row.retry_count);
}

/** A random operation that ended `failed` or `cancelled` (a candidate for an owner retry), with its owner. */
export async function pickEndedOperation(db: Kysely<any>): Promise<{ id: string; ownerUserId: string } | undefined> {
  const row = await db
    .selectFrom('operations')
    .select(['id', 'owner_user_id'])
    .where('status', 'in', ['failed', 'cancelled'])
    .orderBy(sql`RAND()`)
    .limit(1)
    .executeTakeFirst();
  return row && { id: row.id as string, ownerUserId: row.owner_user_id as string };
}
