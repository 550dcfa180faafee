import { AsyncLocalStorage } from 'node:async_hooks';
import { availableParallelism } from 'node:os';
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
  type AdmissionDeps,
  type Logger,
  type RunOutcome,
  type Store,
  type WakeupMessage,
  type WorkerDeps,
} from '../lib/index.js';
import type { Cleanups } from './cleanups.js';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchCapacity, benchOwner, benchPolicy, benchTask, CountingWakeups, ExecutionLog } from './durable-ops-deps.js';
import { CommitCounter, connect, ForeignActivityProbe } from './mariadb.js';
import { summarize, type LatencySummary } from './stats.js';
import { WakeupQueue } from './wakeup-queue.js';

/** Options of {@link runDurableOps}. */
export interface DurableOpsOptions {
  /** A migrated-or-empty benchmark database (`mysql://…/durable_ops_bench_<pid>`); it is migrated here. */
  readonly databaseUrl: string;
  readonly serverUrl: string;
  readonly ops: number;
  readonly owners: number;
  readonly admitters: number;
  /**
   * Wake-up messages one worker invocation receives at most (the event source mapping's `batchSize`, serverless.yml's
   * `workerBatchSize`): 10 in `npm run bench`, a batch-10 worker as the throughput comparison with peers uses; the
   * deployed default is 1 (README "Sizing the worker"). Each receive returns what is waiting, without a batching window.
   */
  readonly sqsBatchSize: number;
  readonly workers: number;
  /** Give up (and count the rest as lost) after this many ms. */
  readonly timeoutMs: number;
  /** Where switching the InnoDB commit monitor off again is registered while pending. */
  readonly cleanups?: Cleanups;
}

/** Where one operation's time went inside `processWakeup`, in ms (summaries over every successful run). */
export interface WorkerPhases {
  /** `processWakeup` start → `operation_claimed` logged: `claimNextOperation` (its transaction committed). */
  readonly claim: LatencySummary;
  /**
   * claimed → handler started: what `runClaimedOperation` does before the handler (params parsing; the owner-settings
   * read and any pre-run heartbeat, where the code path has them).
   */
  readonly prepare: LatencySummary;
  /** handler returned → `operation_succeeded` logged: the completion transaction (notification, capacity release). */
  readonly complete: LatencySummary;
  /** The whole `processWakeup` call. */
  readonly total: LatencySummary;
}

/** What {@link runDurableOps} measured and checked. */
export interface DurableOpsResult {
  readonly ops: number;
  /** First admission started → last completion committed. */
  readonly seconds: number;
  readonly opsPerSec: number;
  /** Every `admitOperation` call, in ms. */
  readonly admission: LatencySummary;
  readonly phases: WorkerPhases;
  /**
   * Server-wide counter deltas over the timed window, and per operation: commits, and statements sent (round trips;
   * the counter's own reads add a handful to the whole run).
   */
  readonly commits: {
    readonly rwCommits: number;
    readonly comCommit: number;
    readonly perOp: number;
    readonly comCommitPerOp: number;
    readonly statementsPerOp: number;
  };
  /** Process-list samples during the timed window, and how many saw another client's statement running. */
  readonly foreignActivity: { readonly samples: number; readonly busySamples: number };
  /** CPU per operation over the timed window (bench process: admission, workers, drivers; server: MariaDB). */
  readonly cpu: CpuPerOp;
  /** Wake-up messages the no-op sender would have sent to SQS. */
  readonly wakeupsSent: number;
  /** `processWakeup` calls that found nothing to claim. */
  readonly idleWakeups: number;
  /** Capacity rejections the admitters retried (expected 0: the limits fit N). */
  readonly capacityRejections: number;
  /** Errors thrown by `admitOperation` or `processWakeup` and retried (a redelivered message / a client retry). */
  readonly retriedErrors: number;
  readonly outcomes: Readonly<Record<string, number>>;
  readonly check: {
    readonly statuses: Readonly<Record<string, number>>;
    readonly notifications: number;
    readonly notifiedOperations: number;
    readonly heldCapacitySlots: number;
    readonly lost: number;
    readonly doubleExecuted: number;
  };
  /** Everything that is wrong with the run (empty when it is clean). */
  readonly problems: readonly string[];
}

/** Timestamps (performance.now) of one `processWakeup` call, filled in by the logger hook and the task. */
interface Trace {
  readonly start: number;
  claimed?: number;
  runStart?: number;
  runEnd?: number;
  succeeded?: number;
}

/**
 * durable-ops end to end through its real code paths: `admitters` concurrent callers of `admitOperation`
 * (idempotency key, capacity reservation, wake-up after commit) for `ops` no-op operations from `owners` owners, and
 * `workers` concurrent workers calling `processWakeup` (claim → run, heartbeating → complete with notification and
 * capacity release) once per wake-up message, both at the same time. Admission and workers use separate pools of their
 * own size, as the API and worker Lambdas would.
 *
 * Claim latency is `processWakeup` start → the `operation_claimed` lifecycle line, which `processWakeup` logs right
 * after `claimNextOperation` returned: the logger is `silentLogger` plus that timestamp (an AsyncLocalStorage trace
 * per call); metrics are `noopMetrics`.
 */
export async function runDurableOps(options: DurableOpsOptions): Promise<DurableOpsResult> {
  const traces = new AsyncLocalStorage<Trace>();
  const executions = new ExecutionLog();
  const warnings: string[] = [];
  const logger: Logger = {
    info(_message, context) {
      const trace = traces.getStore();
      if (trace && context?.event === 'operation_claimed') trace.claimed = performance.now();
      else if (trace && context?.event === 'operation_succeeded') trace.succeeded = performance.now();
    },
    warn: (message) => void warnings.push(message),
    error: (message) => void warnings.push(message),
  };
  const task = benchTask((operationId, phase) => {
    const trace = traces.getStore();
    if (phase === 'start') executions.record(operationId);
    if (trace) trace[phase === 'start' ? 'runStart' : 'runEnd'] = performance.now();
  });
  const registry = new TaskRegistry().register(task);
  const policy = benchPolicy();
  const capacity = benchCapacity(options.ops, options.owners, options.workers);
  const queue = new WakeupQueue();
  const wakeups = new CountingWakeups((message) => queue.push(message));
  const admissionStore = openStore(options.databaseUrl, { poolSize: options.admitters });
  const workerStore = openStore(options.databaseUrl, { poolSize: options.workers });
  const counter = await CommitCounter.open(options.serverUrl, options.cleanups);
  try {
    await migrateToLatest(admissionStore);
    await warmPool(admissionStore, options.admitters);
    await warmPool(workerStore, options.workers);
    // The pools' slot rows are created on first use (prepareAdmissionPools, as admission itself calls it): create
    // them all before timing, so the timed admissions find every pool in place.
    for (let k = 0; k < options.owners; k++) {
      await prepareAdmissionPools(admissionStore, capacity, BENCH_TASK_TYPE, benchOwner(k), DEFAULT_OWNER_SETTINGS.plan);
    }
    const admissionDeps: AdmissionDeps = { registry, policy, wakeups, logger: silentLogger, metrics: noopMetrics, capacity };
    const workerDeps: WorkerDeps = { store: workerStore, registry, policy, wakeups, logger, metrics: noopMetrics, capacity };
    const scopes = Array.from({ length: options.owners }, (_, k) => new OwnerScope(admissionStore, benchOwner(k)));

    const admissionMs: number[] = [];
    const claimMs: number[] = [];
    const prepareMs: number[] = [];
    const completeMs: number[] = [];
    const totalMs: number[] = [];
    const admitted: string[] = [];
    const outcomes: Record<string, number> = {};
    let capacityRejections = 0;
    let retriedErrors = 0;
    let idleWakeups = 0;
    let terminal = 0;
    /** Operations the workers must end: `ops`, or fewer once admission has stopped early on an error. */
    let target = options.ops;
    let next = 0;
    let admissionDone = false;
    let lastCompletion = 0;
    const errors: string[] = [];

    const before = await counter.read();
    const probe = await ForeignActivityProbe.start(options.serverUrl);
    const cpu = cpuWindow('mariadb', availableParallelism());
    const started = performance.now();
    const deadline = started + options.timeoutMs;

    const admitter = async () => {
      for (let i = next++; i < options.ops; i = next++) {
        const t0 = performance.now();
        for (let tries = 0; ; tries++) {
          try {
            const scope = scopes[i % options.owners] as OwnerScope;
            const admission = await admitOperation(scope, admissionDeps, `bench-${i}`, {
              taskType: BENCH_TASK_TYPE,
              subject: { type: BENCH_SUBJECT_TYPE, id: `s-${i}` },
              params: { i },
            });
            if (!admission.replayed) admitted.push(admission.operation.id);
            break;
          } catch (error) {
            if (error instanceof CapacityExhaustedError) {
              capacityRejections++;
            } else {
              // A client would retry a failed request with the same key; give up after three.
              if (tries >= 3) throw error;
              retriedErrors++;
              errors.push(String(error));
            }
            await sleep(5);
          }
        }
        admissionMs.push(performance.now() - t0);
      }
    };
    /** Handles one wake-up message (null: a poll with none) as one record of the worker Lambda's batch. */
    const handle = async (message: WakeupMessage | null) => {
      const trace: Trace = { start: performance.now() };
      let outcome: RunOutcome | 'idle';
      try {
        outcome = await traces.run(trace, () => processWakeup(workerDeps, () => 900_000));
      } catch (error) {
        // SQS would redeliver the message after its visibility timeout: put it back.
        retriedErrors++;
        errors.push(String(error));
        if (message) queue.push(message);
        return;
      }
      if (outcome === 'idle') {
        idleWakeups++;
        // No message and nothing claimable yet (a retry waiting for its time): don't spin.
        if (message === null) await sleep(20);
        return;
      }
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome === 'succeeded' || outcome === 'failed' || outcome === 'cancelled') terminal++;
      if (outcome !== 'succeeded' || trace.claimed === undefined || trace.runStart === undefined || trace.runEnd === undefined || trace.succeeded === undefined) return;
      lastCompletion = Math.max(lastCompletion, trace.succeeded);
      claimMs.push(trace.claimed - trace.start);
      prepareMs.push(trace.runStart - trace.claimed);
      completeMs.push(trace.succeeded - trace.runEnd);
      totalMs.push(performance.now() - trace.start);
    };
    const worker = async () => {
      while (terminal < target && performance.now() < deadline) {
        const batch = await queue.takeBatch(options.sqsBatchSize, 50);
        if (batch.length === 0 && !admissionDone) continue;
        // As `createWorkerHandler` does with an SQS event: the records of one batch are handled concurrently. Once
        // admission is done, an empty receive still polls once, for operations whose message was put back.
        await Promise.all(batch.length > 0 ? batch.map(handle) : [handle(null)]);
      }
    };
    const workersDone = Promise.all(Array.from({ length: options.workers }, worker));
    const admission = await Promise.allSettled(Array.from({ length: options.admitters }, admitter));
    const admissionFailure = admission.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (admissionFailure) target = admitted.length;
    admissionDone = true;
    await workersDone;
    const cpuPerOp = cpu(options.ops);
    const foreignActivity = await probe.stop();
    const after = await counter.read();
    const seconds = ((lastCompletion || performance.now()) - started) / 1000;

    const check = await verify(options, admitted, executions);
    const problems: string[] = [];
    if (admissionFailure) problems.push(`admission failed: ${String(admissionFailure.reason)}`);
    if (admitted.length !== options.ops) problems.push(`admitted ${admitted.length} of ${options.ops}`);
    if (check.lost > 0) problems.push(`${check.lost} operations lost (not succeeded, or never run)`);
    if (check.doubleExecuted > 0) problems.push(`${check.doubleExecuted} operations executed more than once`);
    if ((check.statuses.succeeded ?? 0) !== options.ops) problems.push(`${check.statuses.succeeded ?? 0} succeeded rows, expected ${options.ops}`);
    if (check.notifications !== options.ops || check.notifiedOperations !== options.ops) {
      problems.push(`${check.notifications} notifications for ${check.notifiedOperations} operations, expected ${options.ops}`);
    }
    if (check.heldCapacitySlots !== 0) problems.push(`${check.heldCapacitySlots} capacity slots still held after every operation ended`);
    if (warnings.length > 0) problems.push(`${warnings.length} warnings logged, first: ${warnings[0]}`);
    if (errors.length > 0) problems.push(`${errors.length} errors retried, first: ${errors[0]}`);
    const rwCommits = after.rwCommits - before.rwCommits;
    const comCommit = after.comCommit - before.comCommit;
    return {
      ops: options.ops,
      seconds,
      opsPerSec: (check.statuses.succeeded ?? 0) / seconds,
      admission: summarize(admissionMs),
      phases: { claim: summarize(claimMs), prepare: summarize(prepareMs), complete: summarize(completeMs), total: summarize(totalMs) },
      commits: {
        rwCommits,
        comCommit,
        perOp: rwCommits / options.ops,
        comCommitPerOp: comCommit / options.ops,
        statementsPerOp: (after.statements - before.statements) / options.ops,
      },
      foreignActivity,
      cpu: cpuPerOp,
      wakeupsSent: wakeups.sent,
      idleWakeups,
      capacityRejections,
      retriedErrors,
      outcomes,
      check,
      problems,
    };
  } finally {
    await counter.close();
    await admissionStore.destroy();
    await workerStore.destroy();
  }
}

/** Opens `size` connections of the store's pool (mysql2 opens them lazily) so no timed call pays a connect. */
export async function warmPool(store: Store, size: number): Promise<void> {
  await Promise.all(Array.from({ length: size }, () => sql`SELECT 1`.execute(store.db)));
}

/** Reads back what the database holds after the run and compares it with what was admitted and executed. */
async function verify(options: DurableOpsOptions, admitted: readonly string[], executions: ExecutionLog): Promise<DurableOpsResult['check']> {
  const connection = await connect(options.serverUrl, decodeURIComponent(new URL(options.databaseUrl).pathname.slice(1)));
  try {
    const [statusRows] = await connection.query('SELECT status, COUNT(*) AS n FROM operations GROUP BY status');
    const statuses = Object.fromEntries((statusRows as { status: string; n: number }[]).map((r) => [r.status, Number(r.n)]));
    const [succeededRows] = await connection.query("SELECT id FROM operations WHERE status = 'succeeded'");
    const succeeded = new Set((succeededRows as { id: string }[]).map((r) => r.id));
    const [notificationRows] = await connection.query('SELECT COUNT(*) AS n, COUNT(DISTINCT operation_id) AS d FROM operation_notifications');
    const notified = (notificationRows as { n: number; d: number }[])[0];
    const [slotRows] = await connection.query('SELECT COUNT(*) AS n FROM capacity_slots WHERE operation_id IS NOT NULL');
    const lostAdmitted = admitted.filter((id) => !succeeded.has(id) || !executions.ran(id)).length;
    return {
      statuses,
      notifications: Number(notified?.n ?? 0),
      notifiedOperations: Number(notified?.d ?? 0),
      heldCapacitySlots: Number((slotRows as { n: number }[])[0]?.n ?? 0),
      lost: lostAdmitted + Math.max(0, options.ops - admitted.length),
      doubleExecuted: executions.duplicated().length,
    };
  } finally {
    await connection.end();
  }
}
