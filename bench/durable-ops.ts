import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Cleanups } from './cleanups.js';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { benchCapacity } from './durable-ops-deps.js';
import { DurableOpsRig, type RunCheck } from './durable-ops-rig.js';
import { CommitCounter, ForeignActivityProbe } from './mariadb.js';
import { summarize, type LatencySummary } from './stats.js';

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
  readonly check: RunCheck;
  /** Everything that is wrong with the run (empty when it is clean). */
  readonly problems: readonly string[];
}

/**
 * durable-ops end to end through its real code paths: `admitters` concurrent callers of `admitOperation`
 * (idempotency key, capacity reservation, wake-up after commit) for `ops` no-op operations from `owners` owners, and
 * `workers` concurrent workers calling `processWakeup` (claim → run, heartbeating → complete with notification and
 * capacity release) once per wake-up message, both at the same time. Admission and workers use separate pools of their
 * own size, as the API and worker Lambdas would.
 *
 * Claim latency is `processWakeup` start → the `operation_claimed` lifecycle line, which `processWakeup` logs right
 * after `claimNextOperation` returned (see {@link DurableOpsRig}, the set-up this shares with the open-loop phase).
 */
export async function runDurableOps(options: DurableOpsOptions): Promise<DurableOpsResult> {
  const rig = await DurableOpsRig.open({ ...options, capacity: benchCapacity(options.ops, options.owners, options.workers) });
  try {
    const counter = await CommitCounter.open(options.serverUrl, options.cleanups);
    try {
      return await measure(options, rig, counter);
    } finally {
      await counter.close();
    }
  } finally {
    await rig.close();
  }
}

/** The timed window of {@link runDurableOps} and the checks after it. */
async function measure(options: DurableOpsOptions, rig: DurableOpsRig, counter: CommitCounter): Promise<DurableOpsResult> {
  const admissionMs: number[] = [];
  const claimMs: number[] = [];
  const prepareMs: number[] = [];
  const completeMs: number[] = [];
  const totalMs: number[] = [];
  const admitted: string[] = [];
  /** Operations the workers must end: `ops`, or fewer once admission has stopped early on an error. */
  let target = options.ops;
  let next = 0;
  let admissionDone = false;
  let lastCompletion = 0;

  const before = await counter.read();
  const probe = await ForeignActivityProbe.start(options.serverUrl);
  const cpu = cpuWindow('mariadb', availableParallelism());
  const started = performance.now();

  const admitter = async () => {
    for (let i = next++; i < options.ops; i = next++) {
      const t0 = performance.now();
      const admission = await rig.admit(i);
      if (!admission.replayed) admitted.push(admission.operation.id);
      admissionMs.push(performance.now() - t0);
    }
  };
  const workersDone = rig.work({
    target: () => target,
    admissionDone: () => admissionDone,
    deadline: started + options.timeoutMs,
    onSucceeded: (trace) => {
      lastCompletion = Math.max(lastCompletion, trace.succeeded);
      claimMs.push(trace.claimed - trace.start);
      prepareMs.push(trace.runStart - trace.claimed);
      completeMs.push(trace.succeeded - trace.runEnd);
      totalMs.push(performance.now() - trace.start);
    },
  });
  const admission = await Promise.allSettled(Array.from({ length: options.admitters }, admitter));
  const admissionFailure = admission.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (admissionFailure) target = admitted.length;
  admissionDone = true;
  await workersDone;
  const cpuPerOp = cpu(options.ops);
  const foreignActivity = await probe.stop();
  const after = await counter.read();
  const seconds = ((lastCompletion || performance.now()) - started) / 1000;

  const check = await rig.verify(options.serverUrl, options.ops, admitted);
  const problems = [...(admissionFailure ? [`admission failed: ${String(admissionFailure.reason)}`] : []), ...rig.problems(check, options.ops, admitted.length)];
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
    wakeupsSent: rig.wakeups.sent,
    idleWakeups: rig.idleWakeups,
    capacityRejections: rig.capacityRejections,
    retriedErrors: rig.retriedErrors,
    outcomes: rig.outcomes,
    check,
    problems,
  };
}
