import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { noCleanups, type Cleanups } from './cleanups.js';
import { cpuShare, cpuSnapshot, type CpuShare } from './cpu.js';
import { benchCapacity } from './durable-ops-deps.js';
import { DurableOpsRig, type RunCheck } from './durable-ops-rig.js';
import { benchDatabaseName, createBenchDatabase } from './mariadb.js';
import { summarize, type LatencySummary } from './stats.js';

/** The open-loop arrival rate as a share of the saturation throughput it is given. */
export const OPEN_LOOP_LOAD = 0.5;

/** Options of {@link runOpenLoop}. */
export interface OpenLoopOptions {
  readonly serverUrl: string;
  /**
   * Operations/s the durable-ops phase reached at saturation (closed loop, same set-up) earlier in the run: arrivals
   * come at {@link OPEN_LOOP_LOAD} of it.
   */
  readonly saturationOpsPerSec: number;
  /** How long arrivals come, in ms (about 10 s quick, 30 s full). */
  readonly durationMs: number;
  readonly owners: number;
  readonly admitters: number;
  readonly workers: number;
  /** Wake-up messages one worker invocation receives at most (as in the durable-ops phase). */
  readonly sqsBatchSize: number;
  /** How long the workers may take after the last arrival to end what was admitted, in ms; the rest counts as lost. */
  readonly drainMs: number;
  /** Where the database's drop is registered while it exists. */
  readonly cleanups?: Cleanups;
}

/** What {@link runOpenLoop} measured and checked; every latency in ms. */
export interface OpenLoopResult {
  readonly saturationOpsPerSec: number;
  /** The arrival rate's share of it ({@link OPEN_LOOP_LOAD}). */
  readonly load: number;
  /** Arrivals per second: `load` × the saturation throughput. */
  readonly ratePerSec: number;
  /** Arrivals scheduled (rate × duration). */
  readonly ops: number;
  /** How long arrivals came, in s. */
  readonly seconds: number;
  /** Operations that succeeded ÷ (first arrival → last completion), per second: about `ratePerSec` when it kept up. */
  readonly achievedPerSec: number;
  /** Scheduled arrival → `admitOperation` returned (its commit and wake-up sent). */
  readonly admission: LatencySummary;
  /** Wake-up sent (after the admission committed) → the claim that took the operation committed. */
  readonly claim: LatencySummary;
  /** Scheduled arrival → `operation_succeeded` (the completion committed). */
  readonly endToEnd: LatencySummary;
  /**
   * Scheduled arrival → `admitOperation` called: the bench process's own lateness (timer granularity, its event loop
   * busy with the workers), part of `admission` and `endToEnd` as a client's wait would be.
   */
  readonly schedulerLag: LatencySummary;
  /** CPU shares while arrivals came and the workers drained them. */
  readonly cpu: CpuShare;
  readonly idleWakeups: number;
  readonly check: RunCheck;
  readonly problems: readonly string[];
}

/**
 * Latency at half load, open loop: admissions arrive at a fixed rate ({@link OPEN_LOOP_LOAD} × the saturation
 * throughput), evenly spaced and each on its own schedule — an arrival never waits for an earlier one to finish, so a
 * slow admission or a backed-up worker cannot slow the arrivals down and hide its own latency (coordinated omission):
 * every latency counts from the arrival's scheduled time. The admissions, workers and wake-up path are the durable-ops
 * phase's ({@link DurableOpsRig}: same pools, batch size, limits and no-op task, in a database of its own), as are the
 * checks afterwards (every operation succeeded once, notified once, no slot held).
 *
 * ```
 *   scheduled ─ admitOperation ─ commit, wake-up sent ─ (queue) ─ claim commits ─ run ─ succeeded commits
 *   ├────────── admission ───────┤                                                                     │
 *                                ├──────────── claim ────────────────────┤                             │
 *   ├────────────────────────────────────── end to end ────────────────────────────────────────────────┤
 * ```
 */
export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const ratePerSec = OPEN_LOOP_LOAD * options.saturationOpsPerSec;
  if (!(ratePerSec > 0)) throw new Error(`open loop needs a saturation throughput, got ${options.saturationOpsPerSec} ops/s`);
  const ops = Math.max(1, Math.round((ratePerSec * options.durationMs) / 1000));
  const cleanups = options.cleanups ?? noCleanups;
  const database = await createBenchDatabase(options.serverUrl, benchDatabaseName('openloop'));
  cleanups.set(`database ${database.name}`, () => database.drop());
  try {
    return await measure(options, ratePerSec, ops, database.url);
  } finally {
    await database.drop();
    cleanups.delete(`database ${database.name}`);
  }
}

/** The arrivals, the drain and the checks of {@link runOpenLoop}, on the database of `databaseUrl`. */
async function measure(options: OpenLoopOptions, ratePerSec: number, ops: number, databaseUrl: string): Promise<OpenLoopResult> {
  const wakeupAt = new Map<string, number>();
  const rig = await DurableOpsRig.open({
    ...options,
    databaseUrl,
    capacity: benchCapacity(ops, options.owners, options.workers),
    onWakeup: (message, at) => {
      if (message.reason === 'admitted' && message.operationId !== undefined) wakeupAt.set(message.operationId, at);
    },
  });
  try {
    const scheduledAt = new Map<string, number>();
    const claimedAt = new Map<string, number>();
    const succeededAt = new Map<string, number>();
    const admissionMs: number[] = [];
    const lagMs: number[] = [];
    const admitted: string[] = [];
    const failures: string[] = [];
    let arrivalsDone = false;
    let lastCompletion = 0;

    const cpu0 = cpuSnapshot();
    const intervalMs = 1000 / ratePerSec;
    const started = performance.now();
    const workersDone = rig.work({
      target: () => (arrivalsDone ? admitted.length : Number.POSITIVE_INFINITY),
      admissionDone: () => arrivalsDone,
      deadline: started + options.durationMs + options.drainMs,
      onSucceeded: (trace) => {
        claimedAt.set(trace.operationId, trace.claimed);
        succeededAt.set(trace.operationId, trace.succeeded);
        lastCompletion = Math.max(lastCompletion, trace.succeeded);
      },
    });
    const arrive = async (k: number, at: number) => {
      lagMs.push(performance.now() - at);
      try {
        const admission = await rig.admit(k);
        admissionMs.push(performance.now() - at);
        if (admission.replayed) return;
        admitted.push(admission.operation.id);
        scheduledAt.set(admission.operation.id, at);
      } catch (error) {
        failures.push(String(error));
      }
    };
    const arrivals: Promise<void>[] = [];
    for (let k = 0; k < ops; ) {
      const due = started + k * intervalMs;
      const now = performance.now();
      if (due > now) {
        await sleep(due - now);
        continue;
      }
      // Every arrival now due goes at once (a late timer is caught up, never skipped); each counts from its schedule.
      for (; k < ops && started + k * intervalMs <= now; k++) arrivals.push(arrive(k, started + k * intervalMs));
    }
    await Promise.all(arrivals);
    arrivalsDone = true;
    await workersDone;
    const cpu = cpuShare(cpu0, cpuSnapshot(), availableParallelism());

    const claimMs: number[] = [];
    const endToEndMs: number[] = [];
    for (const id of admitted) {
      const sent = wakeupAt.get(id);
      const claimed = claimedAt.get(id);
      const succeeded = succeededAt.get(id);
      if (sent !== undefined && claimed !== undefined) claimMs.push(claimed - sent);
      if (succeeded !== undefined) endToEndMs.push(succeeded - (scheduledAt.get(id) as number));
    }
    const check = await rig.verify(options.serverUrl, ops, admitted);
    const problems = [...(failures.length > 0 ? [`${failures.length} admissions failed, first: ${failures[0]}`] : []), ...rig.problems(check, ops, admitted.length)];
    if (claimMs.length !== admitted.length) problems.push(`${admitted.length - claimMs.length} operations without a wake-up and a claim timed`);
    return {
      saturationOpsPerSec: options.saturationOpsPerSec,
      load: OPEN_LOOP_LOAD,
      ratePerSec,
      ops,
      seconds: options.durationMs / 1000,
      achievedPerSec: (check.statuses.succeeded ?? 0) / (((lastCompletion || performance.now()) - started) / 1000),
      admission: summarize(admissionMs),
      claim: summarize(claimMs),
      endToEnd: summarize(endToEndMs),
      schedulerLag: summarize(lagMs),
      cpu,
      idleWakeups: rig.idleWakeups,
      check,
      problems,
    };
  } finally {
    await rig.close();
  }
}
