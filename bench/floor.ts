import { createHash, randomBytes, randomInt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type RowDataPacket } from 'mysql2/promise';
import { migrateToLatest, openStore } from '../lib/index.js';
import { ADMIT_CALL, planTable } from '../lib/operations/admission/admission-procedure.repository.js';
import { CLAIM_CALL, claimConfig } from '../lib/operations/lease/claim-procedure.repository.js';
import { MAX_TURNS_PER_CLAIM } from '../lib/operations/lease/fair-claim.js';
import { COMPLETE_CALL } from '../lib/operations/lifecycle/complete-procedure.repository.js';
import { newOperationId } from '../lib/operations/operation-id.js';
import { TaskRegistry } from '../lib/tasks/task-registry.js';
import type { Cleanups } from './cleanups.js';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchCapacity, benchOwner, benchPolicy, benchTask, ExecutionLog } from './durable-ops-deps.js';
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
 * Claim groups (and completion groups) in flight at once: what one library process allows (`GROUPS_IN_FLIGHT` in
 * claim-operation.ts, the completion group's `maxConcurrent`). With one per worker instead (16), concurrent claimers of
 * 32 fight over the same first turns and their rows' locks: the floor ran at half the library's rate (A/B in the
 * README's Performance section).
 */
const FLOOR_IN_FLIGHT = 2;

/** At most `size` of the calls given to {@link Gate.run} at once; the rest wait in order. */
class Gate {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/**
 * The design floor: what this design's statements cost on this machine with none of the library around
 * them — no kysely, no validation, no hashing of requests, no logging, no lease rechecks, no group commit machinery —
 * so a run can tell how much of the distance to a target is durable-ops' own code and how much is the design's SQL.
 *
 * The same schema (migrated, with its stored procedures), the same load and concurrency as the durable-ops phase, the
 * same three round trips per step the library makes on MariaDB (docs/design.md §9), on bare mysql2 (READ COMMITTED
 * sessions, as `openStore`), their constant parameters built once by the library's own builders:
 * - admission: one `CALL admit_operation_v2` (owner recheck, insert, the owner's counter, turn, global slot), then a
 *   wake-up;
 * - a worker takes wake-ups in full groups of {@link FLOOR_GROUP} (32, the library's largest group), claims that many in
 *   one `CALL claim_operations_v2` (the fair order, running counters, turn writes) and completes them in one
 *   `CALL complete_operations_v2` (guarded update, notifications, capacity release, idle turns, the owners' due work), at most
 *   {@link FLOOR_IN_FLIGHT} of each at once, as one library process.
 * So it sends no more statements and commits no more often per operation than durable-ops does, and spends none of its
 * CPU on library code: durable-ops cannot beat it on the same machine, whatever its code does — only other statements
 * could.
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
    const connections = await Promise.all(Array.from({ length: options.admitters + options.workers }, () => pool.getConnection()));
    for (const connection of connections) connection.release();

    const wakeups = new Batcher(FLOOR_GROUP);
    const executions = new ExecutionLog();
    const problems: string[] = [];
    let retriedTransactions = 0;
    let next = 0;
    let lastCompletion = 0;

    // The routines' parameters that do not change per call, built once by the library's own builders.
    const capacity = benchCapacity(options.ops, options.owners, options.workers);
    const registry = new TaskRegistry().register(benchTask(() => {}));
    const plans = planTable(capacity, BENCH_TASK_TYPE, {});
    const claimDeps = { registry, policy: benchPolicy(), capacity };
    const config = claimConfig(claimDeps, [{ type: BENCH_TASK_TYPE, lane: 'local' }]);
    const perOwnerLimit = capacity.admissionLimits(BENCH_TASK_TYPE, '*');

    /** One CALL, again after a deadlock or lock wait timeout (the routine rolled back). */
    const call = async (text: string, parameters: unknown[]): Promise<RowDataPacket[][]> => {
      for (let tries = 1; ; tries++) {
        try {
          const [results] = await pool.query<RowDataPacket[][]>(text, parameters);
          return results;
        } catch (error) {
          const errno = (error as { errno?: number }).errno;
          if (tries >= MAX_TRIES || (errno !== 1213 && errno !== 1205)) throw error;
          retriedTransactions++;
        }
      }
    };

    const admit = async (i: number) => {
      const owner = benchOwner(i % options.owners);
      const id = newOperationId();
      const [answer] = await call(ADMIT_CALL, [
        id, owner, BENCH_TASK_TYPE, `bench-${i}`, createHash('sha256').update(String(i)).digest('hex'), BENCH_SUBJECT_TYPE, `s-${i}`,
        JSON.stringify({ i }), 0, 3, 900_000, 60_000, 0, randomInt(2 ** 47), 0, 'free', 1, 'local_only', plans, perOwnerLimit.global,
        `global:${BENCH_TASK_TYPE}`,
      ]);
      if (answer?.[0]?.admission_outcome !== 'admitted') throw new Error(`admission answered ${String(answer?.[0]?.admission_outcome)}`);
      wakeups.add(id);
    };

    // As in the library, at most FLOOR_IN_FLIGHT claim groups (and completion groups) of the process at once.
    const claims = new Gate(FLOOR_IN_FLIGHT);
    const completions = new Gate(FLOOR_IN_FLIGHT);
    const claimAndComplete = async (n: number): Promise<number> => {
      const tokens = Array.from({ length: n }, () => randomBytes(32).toString('hex'));
      const [claimed = []] = await claims.run(() => call(CLAIM_CALL, [n, config, JSON.stringify(tokens), 0, 'free', 0, MAX_TURNS_PER_CLAIM, '[]']));
      if (claimed.length === 0) return 0;
      for (const row of claimed) executions.record(row.id as string);
      const leases = claimed.map((row, i) => [row.id, row.owner_user_id, tokens[i]]);
      const [[answer] = []] = await completions.run(() => call(COMPLETE_CALL, [JSON.stringify(leases), 0, 0]));
      lastCompletion = performance.now();
      return (JSON.parse(String(answer?.held ?? '[]')) as string[]).length;
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
              (SELECT COUNT(*) FROM capacity_slots WHERE operation_id IS NOT NULL)
                + (SELECT COALESCE(SUM(active + running), 0) FROM owner_capacity) AS held`,
    );
    const succeeded = Number(check?.succeeded ?? 0);
    const lost = options.ops - succeeded;
    const doubleExecuted = executions.duplicated().length;
    if (lost > 0) problems.push(`${lost} operations not succeeded`);
    if (doubleExecuted > 0) problems.push(`${doubleExecuted} operations claimed more than once`);
    if (Number(check?.notified ?? 0) !== succeeded) problems.push(`${String(check?.notified)} operations notified, ${succeeded} succeeded`);
    if (Number(check?.held ?? 0) !== 0) problems.push(`${String(check?.held)} capacity slots or owner counter units still held`);
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

