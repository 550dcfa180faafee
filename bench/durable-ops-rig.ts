import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { prepareAdmissionPools } from '../lib/capacity/capacity.js';
import {
  admitOperation,
  CapacityExhaustedError,
  DEFAULT_OWNER_SETTINGS,
  migrateToLatest,
  noopMetrics,
  openStore,
  OwnerScope,
  processWakeup,
  silentLogger,
  TaskRegistry,
  type Admission,
  type AdmissionDeps,
  type CapacityPolicy,
  type Logger,
  type RunOutcome,
  type Store,
  type WakeupMessage,
  type WorkerDeps,
} from '../lib/index.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner, benchPolicy, benchTask, CountingWakeups, ExecutionLog } from './durable-ops-deps.js';
import { connect } from './mariadb.js';
import { WakeupQueue } from './wakeup-queue.js';

/** Options of {@link DurableOpsRig.open}. */
export interface RigOptions {
  /** A migrated-or-empty benchmark database (`mysql://…/durable_ops_bench_<pid>…`); it is migrated here. */
  readonly databaseUrl: string;
  readonly owners: number;
  /** Connections of the admission pool (the API Lambdas' side). */
  readonly admitters: number;
  /** Concurrent workers, and connections of the worker pool. */
  readonly workers: number;
  /** Wake-up messages one worker invocation receives at most (the event source mapping's `batchSize`). */
  readonly sqsBatchSize: number;
  readonly capacity: CapacityPolicy;
  /** Called with every wake-up message as it is sent (after the commit that prompted it), at `performance.now()`. */
  readonly onWakeup?: (message: WakeupMessage, at: number) => void;
}

/** Timestamps (`performance.now()`, ms) of one `processWakeup` call, filled in by the logger hook and the task. */
export interface Trace {
  readonly start: number;
  /** The operation the call claimed (from its `operation_claimed` line). */
  operationId?: string;
  claimed?: number;
  runStart?: number;
  runEnd?: number;
  succeeded?: number;
}

/** A {@link Trace} of a call that claimed and ran an operation to `succeeded`: every timestamp is there. */
export type SucceededTrace = Required<Trace>;

/** What a run's database holds afterwards, compared with what was admitted and executed. */
export interface RunCheck {
  readonly statuses: Readonly<Record<string, number>>;
  readonly notifications: number;
  readonly notifiedOperations: number;
  /** Capacity slots held plus the owners' counter units (`owner_capacity` active + running) after the run: 0 when everything was given back. */
  readonly heldCapacitySlots: number;
  readonly lost: number;
  readonly doubleExecuted: number;
}

/** How {@link DurableOpsRig.work} runs its workers. */
export interface WorkOptions {
  /** Operations the workers must end before they stop (read again after every batch). */
  readonly target: () => number;
  /** Whether admission has stopped: only then does an empty receive still poll once (for messages put back). */
  readonly admissionDone: () => boolean;
  /** Stop at this `performance.now()` whatever is left. */
  readonly deadline: number;
  /** Called for every call that ran an operation to `succeeded`. */
  readonly onSucceeded: (trace: SucceededTrace) => void;
}

/**
 * durable-ops wired as the API and worker Lambdas run it, for the throughput and latency phases: the no-op task, an
 * admission pool and a worker pool of their own size, an in-memory wake-up queue standing in for SQS, and workers
 * calling `processWakeup` once per message. Claim timing comes from the `operation_claimed` and `operation_succeeded`
 * lifecycle lines, which `processWakeup` logs right after the claim and the completion committed: the workers' logger
 * is `silentLogger` plus those timestamps (an AsyncLocalStorage trace per call); metrics are `noopMetrics`.
 */
export class DurableOpsRig {
  /** Every run of the task, by operation id. */
  readonly executions = new ExecutionLog();
  /** Warnings and errors the workers logged. */
  readonly warnings: string[] = [];
  /** Errors thrown by `admitOperation` or `processWakeup` and retried. */
  readonly errors: string[] = [];
  readonly outcomes: Record<string, number> = {};
  /** Capacity rejections {@link admit} retried (expected 0: the limits fit the load). */
  capacityRejections = 0;
  /** Errors retried (a client's retry of a failed request, a redelivered message). */
  retriedErrors = 0;
  /** `processWakeup` calls that found nothing to claim. */
  idleWakeups = 0;
  /** Operations the workers ended (succeeded, failed or cancelled). */
  terminal = 0;
  readonly wakeups: CountingWakeups;
  readonly #options: RigOptions;
  readonly #admissionStore: Store;
  readonly #workerStore: Store;
  readonly #queue = new WakeupQueue();
  readonly #traces = new AsyncLocalStorage<Trace>();
  readonly #admissionDeps: AdmissionDeps;
  readonly #workerDeps: WorkerDeps;
  readonly #scopes: readonly OwnerScope[];

  private constructor(options: RigOptions) {
    this.#options = options;
    this.wakeups = new CountingWakeups((message) => {
      options.onWakeup?.(message, performance.now());
      this.#queue.push(message);
    });
    const logger: Logger = {
      debug: () => {},
      info: (_message, context) => {
        const trace = this.#traces.getStore();
        if (trace && context?.event === 'operation_claimed') {
          trace.claimed = performance.now();
          trace.operationId = String(context.operationId);
        } else if (trace && context?.event === 'operation_succeeded') trace.succeeded = performance.now();
      },
      warn: (message) => void this.warnings.push(message),
      error: (message) => void this.warnings.push(message),
    };
    const task = benchTask((operationId, phase) => {
      const trace = this.#traces.getStore();
      if (phase === 'start') this.executions.record(operationId);
      if (trace) trace[phase === 'start' ? 'runStart' : 'runEnd'] = performance.now();
    });
    const registry = new TaskRegistry().register(task);
    const policy = benchPolicy();
    this.#admissionStore = openStore(options.databaseUrl, { poolSize: options.admitters });
    this.#workerStore = openStore(options.databaseUrl, { poolSize: options.workers });
    const { capacity } = options;
    const wakeups = this.wakeups;
    this.#admissionDeps = { registry, policy, wakeups, logger: silentLogger, metrics: noopMetrics, capacity };
    this.#workerDeps = { store: this.#workerStore, registry, policy, wakeups, logger, metrics: noopMetrics, capacity };
    this.#scopes = Array.from({ length: options.owners }, (_, k) => new OwnerScope(this.#admissionStore, benchOwner(k)));
  }

  /**
   * Opens both pools, migrates the database, opens every connection (no timed call pays a connect) and creates every
   * owner's capacity pools (as admission itself would on first use), so timed admissions find them in place.
   */
  static async open(options: RigOptions): Promise<DurableOpsRig> {
    const rig = new DurableOpsRig(options);
    try {
      await prepareBenchStores(rig.#admissionStore, rig.#workerStore, options);
      return rig;
    } catch (error) {
      await rig.close();
      throw error;
    }
  }

  /**
   * Admits operation `i` (key `bench-<i>`, owner `i mod owners`) as a client would: a capacity rejection is retried
   * after 5 ms (counted), any other error up to three times (a client retrying with the same key).
   * @throws the error of the fourth failed try.
   */
  async admit(i: number): Promise<Admission> {
    const scope = this.#scopes[i % this.#options.owners] as OwnerScope;
    for (let tries = 0; ; tries++) {
      try {
        return await admitOperation(scope, this.#admissionDeps, `bench-${i}`, {
          taskType: BENCH_TASK_TYPE,
          subject: { type: BENCH_SUBJECT_TYPE, id: `s-${i}` },
          params: { i },
        });
      } catch (error) {
        if (error instanceof CapacityExhaustedError) {
          this.capacityRejections++;
        } else {
          if (tries >= 3) throw error;
          this.retriedErrors++;
          this.errors.push(String(error));
        }
        await sleep(5);
      }
    }
  }

  /**
   * Runs the workers until {@link terminal} reaches `target()` or the deadline passes: each takes a batch of up to
   * `sqsBatchSize` waiting messages and handles its records concurrently, as `createWorkerHandler` does with an SQS
   * event. A call that throws puts its message back (SQS would redeliver it after its visibility timeout).
   */
  async work(options: WorkOptions): Promise<void> {
    const handle = async (message: WakeupMessage | null) => {
      const trace: Trace = { start: performance.now() };
      let outcome: RunOutcome | 'idle';
      try {
        outcome = await this.#traces.run(trace, () => processWakeup(this.#workerDeps, () => 900_000));
      } catch (error) {
        this.retriedErrors++;
        this.errors.push(String(error));
        if (message) this.#queue.push(message);
        return;
      }
      if (outcome === 'idle') {
        this.idleWakeups++;
        // No message and nothing claimable yet (a retry waiting for its time): don't spin.
        if (message === null) await sleep(20);
        return;
      }
      this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
      if (outcome === 'succeeded' || outcome === 'failed' || outcome === 'cancelled') this.terminal++;
      if (outcome === 'succeeded' && isSucceeded(trace)) options.onSucceeded(trace);
    };
    const worker = async () => {
      while (this.terminal < options.target() && performance.now() < options.deadline) {
        const batch = await this.#queue.takeBatch(this.#options.sqsBatchSize, 50);
        if (batch.length === 0 && !options.admissionDone()) continue;
        // Once admission is done, an empty receive still polls once, for operations whose message was put back.
        await Promise.all(batch.length > 0 ? batch.map(handle) : [handle(null)]);
      }
    };
    await Promise.all(Array.from({ length: this.#options.workers }, worker));
  }

  /** Reads back what the database holds after the run and compares it with the `admitted` ids and {@link executions}. */
  async verify(serverUrl: string, expected: number, admitted: readonly string[]): Promise<RunCheck> {
    const connection = await connect(serverUrl, decodeURIComponent(new URL(this.#options.databaseUrl).pathname.slice(1)));
    try {
      const [statusRows] = await connection.query('SELECT status, COUNT(*) AS n FROM operations GROUP BY status');
      const statuses = Object.fromEntries((statusRows as { status: string; n: number }[]).map((r) => [r.status, Number(r.n)]));
      const [succeededRows] = await connection.query("SELECT id FROM operations WHERE status = 'succeeded'");
      const succeeded = new Set((succeededRows as { id: string }[]).map((r) => r.id));
      const [notificationRows] = await connection.query('SELECT COUNT(*) AS n, COUNT(DISTINCT operation_id) AS d FROM operation_notifications');
      const notified = (notificationRows as { n: number; d: number }[])[0];
      const [slotRows] = await connection.query(
        'SELECT (SELECT COUNT(*) FROM capacity_slots WHERE operation_id IS NOT NULL) + (SELECT COALESCE(SUM(active + running), 0) FROM owner_capacity) AS n',
      );
      const lostAdmitted = admitted.filter((id) => !succeeded.has(id) || !this.executions.ran(id)).length;
      return {
        statuses,
        notifications: Number(notified?.n ?? 0),
        notifiedOperations: Number(notified?.d ?? 0),
        heldCapacitySlots: Number((slotRows as { n: number }[])[0]?.n ?? 0),
        lost: lostAdmitted + Math.max(0, expected - admitted.length),
        doubleExecuted: this.executions.duplicated().length,
      };
    } finally {
      await connection.end();
    }
  }

  /** Everything wrong with a run of `expected` operations of which `admitted` were admitted (empty when it is clean). */
  problems(check: RunCheck, expected: number, admitted: number): string[] {
    const problems: string[] = [];
    if (admitted !== expected) problems.push(`admitted ${admitted} of ${expected}`);
    if (check.lost > 0) problems.push(`${check.lost} operations lost (not succeeded, or never run)`);
    if (check.doubleExecuted > 0) problems.push(`${check.doubleExecuted} operations executed more than once`);
    if ((check.statuses.succeeded ?? 0) !== expected) problems.push(`${check.statuses.succeeded ?? 0} succeeded rows, expected ${expected}`);
    if (check.notifications !== expected || check.notifiedOperations !== expected) {
      problems.push(`${check.notifications} notifications for ${check.notifiedOperations} operations, expected ${expected}`);
    }
    if (check.heldCapacitySlots !== 0) problems.push(`${check.heldCapacitySlots} capacity slots or owner counter units still held after every operation ended`);
    if (this.warnings.length > 0) problems.push(`${this.warnings.length} warnings logged, first: ${this.warnings[0]}`);
    if (this.errors.length > 0) problems.push(`${this.errors.length} errors retried, first: ${this.errors[0]}`);
    return problems;
  }

  /** Closes both pools. */
  async close(): Promise<void> {
    await this.#admissionStore.destroy();
    await this.#workerStore.destroy();
  }
}

function isSucceeded(trace: Trace): trace is SucceededTrace {
  return trace.operationId !== undefined && trace.claimed !== undefined && trace.runStart !== undefined && trace.runEnd !== undefined && trace.succeeded !== undefined;
}

/**
 * Readies a benchmark database for a timed run: migrates it, opens every connection of both pools ({@link warmPool})
 * and creates every owner's capacity pools (as admission itself would on first use), so no timed call pays for them.
 */
export async function prepareBenchStores(
  admissionStore: Store,
  workerStore: Store,
  options: Pick<RigOptions, 'owners' | 'admitters' | 'workers' | 'capacity'>,
): Promise<void> {
  await migrateToLatest(admissionStore);
  await warmPool(admissionStore, options.admitters);
  await warmPool(workerStore, options.workers);
  for (let k = 0; k < options.owners; k++) {
    await prepareAdmissionPools(admissionStore, options.capacity, BENCH_TASK_TYPE, benchOwner(k), DEFAULT_OWNER_SETTINGS.plan);
  }
}

/** Opens `size` connections of the store's pool (mysql2 opens them lazily) so no timed call pays a connect. */
export async function warmPool(store: Store, size: number): Promise<void> {
  await Promise.all(Array.from({ length: size }, () => sql`SELECT 1`.execute(store.db)));
}
