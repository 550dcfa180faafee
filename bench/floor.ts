import { createHash, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type Pool, type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { migrateToLatest, openStore } from '../lib/index.js';
import { newOperationId } from '../lib/operations/operation-id.js';
import type { Cleanups } from './cleanups.js';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner, ExecutionLog } from './durable-ops-deps.js';
import { benchPool, CommitCounter } from './mariadb.js';

/** Options of {@link runFloor}: the same load as the durable-ops phase. */
export interface FloorOptions {
  /** An empty benchmark database (`mysql://…/durable_ops_bench_<pid>_floor`); the schema is migrated here. */
  readonly databaseUrl: string;
  readonly serverUrl: string;
  readonly ops: number;
  readonly owners: number;
  readonly admitters: number;
  readonly workers: number;
  /** Give up (and count the rest as lost) after this many ms. */
  readonly timeoutMs: number;
  readonly cleanups?: Cleanups;
}

/** What {@link runFloor} measured and checked. */
export interface FloorResult {
  readonly ops: number;
  /** First admission started → last completion committed. */
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly commitsPerOp: number;
  readonly statementsPerOp: number;
  readonly cpu: CpuPerOp;
  /** Transactions rolled back on a deadlock or lock wait timeout and run again. */
  readonly retriedTransactions: number;
  readonly lost: number;
  readonly doubleExecuted: number;
  readonly problems: readonly string[];
}

const MAX_TRIES = 5;

/**
 * Operations a floor worker claims, and then completes, in one transaction: `GroupCommit`'s largest group (its default
 * `maxGroup`), so the floor groups at least as well as durable-ops does across SQS batches.
 */
const FLOOR_GROUP = 32;

/**
 * The design floor: what this design's statements cost on this machine with none of the library around
 * them — no kysely, no validation, no hashing of requests, no logging, no lease rechecks — so a run can tell how much
 * of the distance to a target is durable-ops' own code and how much is the design's SQL itself.
 *
 * The same schema (migrated), the same load and concurrency as the durable-ops phase, the same statements in their
 * leanest form, on bare mysql2 (READ COMMITTED sessions, as `openStore`):
 * - admission: the owner-settings read; then `BEGIN`, `INSERT … RETURNING`, for the owner pool and then the global
 *   pool a free-slot `SELECT … FOR UPDATE SKIP LOCKED` from a random slot, one guarded `UPDATE` of both slots,
 *   `COMMIT`; then a wake-up message;
 * - a worker takes wake-ups in full groups of {@link FLOOR_GROUP} (32, the library's largest group) and claims that
 *   many rows in one transaction (`SELECT … LIMIT n FOR UPDATE SKIP LOCKED` in the claim index's order + one
 *   `UPDATE`), then completes them in one transaction (lease-guarded `UPDATE`, the notifications, the capacity
 *   release).
 * So it sends no more statements and commits no more often per operation than durable-ops does, and spends none of its
 * CPU on library code: durable-ops cannot beat it on the same machine, whatever its code does — only other statements
 * (say, an admission of fewer of them) could.
 */
export async function runFloor(options: FloorOptions): Promise<FloorResult> {
  const store = openStore(options.databaseUrl);
  try {
    await migrateToLatest(store);
  } finally {
    await store.destroy();
  }
  const pool = benchPool(options.databaseUrl, options.admitters + options.workers, { timezone: 'Z', dateStrings: true, charset: 'utf8mb4' });
  pool.pool.on('connection', (connection) => {
    connection.query("SET SESSION time_zone = '+00:00', SESSION tx_isolation = 'READ-COMMITTED'");
  });
  const counter = await CommitCounter.open(options.serverUrl, options.cleanups);
  try {
    const perOwner = Math.max(1, Math.ceil(options.ops / options.owners));
    await createPools(pool, options.ops, options.owners, perOwner);
    const connections = await Promise.all(Array.from({ length: options.admitters + options.workers }, () => pool.getConnection()));
    for (const connection of connections) connection.release();

    const wakeups = new Batcher(FLOOR_GROUP);
    const executions = new ExecutionLog();
    const problems: string[] = [];
    let retriedTransactions = 0;
    let next = 0;
    let lastCompletion = 0;

    /** Runs `work` in one transaction, again from the start after a deadlock or lock wait timeout. */
    const transaction = async <T>(work: (connection: PoolConnection) => Promise<T>): Promise<T> => {
      for (let tries = 1; ; tries++) {
        const connection = await pool.getConnection();
        try {
          await connection.query('BEGIN');
          const result = await work(connection);
          await connection.query('COMMIT');
          return result;
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => {});
          const errno = (error as { errno?: number }).errno;
          if (tries >= MAX_TRIES || (errno !== 1213 && errno !== 1205)) throw error;
          retriedTransactions++;
        } finally {
          connection.release();
        }
      }
    };

    const admit = async (i: number) => {
      const owner = benchOwner(i % options.owners);
      const id = newOperationId();
      await pool.query('SELECT * FROM owner_settings WHERE owner_user_id = ?', [owner]);
      await transaction(async (connection) => {
        await connection.query(
          `INSERT INTO operations (id, owner_user_id, task_type, idempotency_key, request_hash, subject_type, subject_id, params_json,
             privacy_mode, priority, max_attempts, status, attempt, retry_count, progress_percent, created_at, updated_at, available_at,
             deadline_at, wake_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'standard', 0, 3, 'queued', 0, 0, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),
             UTC_TIMESTAMP(6) + INTERVAL 900 SECOND, UTC_TIMESTAMP(6) + INTERVAL 60 SECOND)
           RETURNING *`,
          [id, owner, BENCH_TASK_TYPE, `bench-${i}`, createHash('sha256').update(String(i)).digest('hex'), BENCH_SUBJECT_TYPE, `s-${i}`, JSON.stringify({ i })],
        );
        const ownerPool = `owner:${BENCH_TASK_TYPE}:${owner}`;
        const globalPool = `global:${BENCH_TASK_TYPE}`;
        const ownerSlot = await freeSlot(connection, ownerPool, perOwner);
        const globalSlot = await freeSlot(connection, globalPool, options.ops);
        await connection.query(
          `UPDATE capacity_slots SET operation_id = ?, reserved_at = UTC_TIMESTAMP(6)
           WHERE ((pool_key = ? AND slot_no = ?) OR (pool_key = ? AND slot_no = ?)) AND operation_id IS NULL`,
          [id, ownerPool, ownerSlot, globalPool, globalSlot],
        );
      });
      wakeups.add(id);
    };

    const claimAndComplete = async (n: number): Promise<number> => {
      const token = randomBytes(32).toString('hex');
      const ids = await transaction(async (connection) => {
        const [rows] = await connection.query<RowDataPacket[]>(
          `SELECT * FROM operations WHERE claim_lane = 'L' AND task_type IN (?) AND available_at <= UTC_TIMESTAMP(6)
             AND deadline_at > UTC_TIMESTAMP(6) ORDER BY priority DESC, available_at LIMIT ? FOR UPDATE SKIP LOCKED`,
          [BENCH_TASK_TYPE, n],
        );
        const claimed = rows.map((row) => row.id as string);
        if (claimed.length === 0) return claimed;
        await connection.query(
          `UPDATE operations SET status = 'running', attempt = attempt + 1, lease_token = ?, lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND,
             heartbeat_at = UTC_TIMESTAMP(6), started_at = COALESCE(started_at, UTC_TIMESTAMP(6)), available_at = NULL, wake_at = NULL,
             updated_at = UTC_TIMESTAMP(6)
           WHERE id IN (?) AND claim_lane = 'L'`,
          [token, claimed],
        );
        return claimed;
      });
      if (ids.length === 0) return 0;
      for (const id of ids) executions.record(id);
      const done = await transaction(async (connection) => {
        const [update] = await connection.query<ResultSetHeader>(
          `UPDATE operations SET status = 'succeeded', finished_at = UTC_TIMESTAMP(6), lease_token = NULL, lease_expires_at = NULL,
             updated_at = UTC_TIMESTAMP(6)
           WHERE id IN (?) AND lease_token = ? AND status = 'running'`,
          [ids, token],
        );
        await connection.query(
          `INSERT INTO operation_notifications (operation_id, owner_user_id, task_type, status, failure_code, cycle, created_at)
           SELECT id, owner_user_id, task_type, status, failure_code, retry_count, UTC_TIMESTAMP(6) FROM operations
           WHERE id IN (?) AND status = 'succeeded'`,
          [ids],
        );
        await connection.query('UPDATE capacity_slots SET operation_id = NULL, reserved_at = NULL WHERE operation_id IN (?)', [ids]);
        return update.affectedRows;
      });
      lastCompletion = performance.now();
      return done;
    };

    const before = await counter.read();
    const cpu = cpuWindow('mariadb', availableParallelism());
    const started = performance.now();
    const deadline = started + options.timeoutMs;
    const admitter = async () => {
      for (let i = next++; i < options.ops; i = next++) await admit(i);
    };
    const worker = async () => {
      try {
        for (let batch = await wakeups.next(); batch !== null && performance.now() < deadline; batch = await wakeups.next()) {
          let n = batch.length;
          // A claim that found fewer rows than wake-ups (rows another worker's claim had locked) claims the rest next.
          while (n > 0 && performance.now() < deadline) n -= await claimAndComplete(n);
        }
      } catch (error) {
        // Reported, not thrown: a rejected worker would end the process before the database is dropped.
        problems.push(`a worker failed: ${String(error)}`);
      }
    };
    const workersDone = Promise.all(Array.from({ length: options.workers }, worker));
    const admission = await Promise.allSettled(Array.from({ length: options.admitters }, admitter));
    wakeups.close();
    const failed = admission.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      problems.push(`admission failed: ${String(failed.reason)}`);
    }
    await workersDone;
    const cpuPerOp = cpu(options.ops);
    const after = await counter.read();
    const seconds = ((lastCompletion || performance.now()) - started) / 1000;

    const [[check]] = await pool.query<RowDataPacket[]>(
      `SELECT (SELECT COUNT(*) FROM operations WHERE status = 'succeeded') AS succeeded,
              (SELECT COUNT(DISTINCT operation_id) FROM operation_notifications) AS notified,
              (SELECT COUNT(*) FROM capacity_slots WHERE operation_id IS NOT NULL) AS held`,
    );
    const succeeded = Number(check?.succeeded ?? 0);
    const lost = options.ops - succeeded;
    const doubleExecuted = executions.duplicated().length;
    if (lost > 0) problems.push(`${lost} operations not succeeded`);
    if (doubleExecuted > 0) problems.push(`${doubleExecuted} operations claimed more than once`);
    if (Number(check?.notified ?? 0) !== succeeded) problems.push(`${String(check?.notified)} operations notified, ${succeeded} succeeded`);
    if (Number(check?.held ?? 0) !== 0) problems.push(`${String(check?.held)} capacity slots still held`);
    return {
      ops: options.ops,
      seconds,
      opsPerSec: succeeded / seconds,
      commitsPerOp: (after.rwCommits - before.rwCommits) / options.ops,
      statementsPerOp: (after.statements - before.statements) / options.ops,
      cpu: cpuPerOp,
      retriedTransactions,
      lost,
      doubleExecuted,
      problems,
    };
  } finally {
    await counter.close();
    await pool.end();
  }
}

/**
 * Hands out wake-ups in full groups of `size` (the last one, once {@link Batcher.close} was called, may be short):
 * every floor claim takes a whole group, the cheapest way to claim.
 */
class Batcher {
  readonly #size: number;
  #current: string[] = [];
  readonly #full: string[][] = [];
  readonly #waiting: ((batch: string[] | null) => void)[] = [];
  #closed = false;
  constructor(size: number) {
    this.#size = size;
  }
  add(id: string): void {
    this.#current.push(id);
    if (this.#current.length >= this.#size) this.#flush();
  }
  /** No more wake-ups: the short batch goes out, and waiting takers get null once none is left. */
  close(): void {
    this.#closed = true;
    if (this.#current.length > 0) this.#flush();
    for (const waiter of this.#waiting.splice(0)) waiter(null);
  }
  /** The next full batch, or null once closed and drained. */
  next(): Promise<string[] | null> {
    const batch = this.#full.shift();
    if (batch) return Promise.resolve(batch);
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
  #flush(): void {
    const batch = this.#current;
    this.#current = [];
    const waiter = this.#waiting.shift();
    if (waiter) waiter(batch);
    else this.#full.push(batch);
  }
}

/** Slot rows of the global pool (`ops` slots) and of each owner's pool (`perOwner` slots), all free. */
async function createPools(pool: Pool, ops: number, owners: number, perOwner: number): Promise<void> {
  const rows = (key: string, n: number) => Array.from({ length: n }, (_, slot) => [key, slot]);
  const all = [rows(`global:${BENCH_TASK_TYPE}`, ops), ...Array.from({ length: owners }, (_, k) => rows(`owner:${BENCH_TASK_TYPE}:${benchOwner(k)}`, perOwner))].flat();
  for (let at = 0; at < all.length; at += 5_000) {
    await pool.query('INSERT INTO capacity_slots (pool_key, slot_no) VALUES ?', [all.slice(at, at + 5_000)]);
  }
}

/** A free slot of the pool, locked (the capacity repository's read, bare): from a random slot, wrapping once. */
async function freeSlot(connection: PoolConnection, poolKey: string, limit: number): Promise<number> {
  const start = Math.floor(Math.random() * limit);
  for (const [from, below] of [
    [start, limit],
    [0, start],
  ] as const) {
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT slot_no FROM capacity_slots FORCE INDEX (PRIMARY) WHERE pool_key = ? AND operation_id IS NULL AND slot_no >= ? AND slot_no < ?
       ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [poolKey, from, below],
    );
    const slot = rows[0]?.slot_no as number | undefined;
    if (slot !== undefined) return slot;
  }
  throw new Error(`pool ${poolKey} is full: its limit should fit the run`);
}
