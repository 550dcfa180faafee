import { z } from 'zod';
import {
  capacityPolicy,
  defineTask,
  loadCapacityPolicy,
  loadConfig,
  noopMetrics,
  silentLogger,
  type CapacityPolicy,
  type OperationPolicy,
  type TaskDefinition,
  type TaskRegistry,
  type WakeupMessage,
  type WakeupSender,
} from '../lib/index.js';

/** The task type every benchmark operation runs. */
export const BENCH_TASK_TYPE = 'bench.noop';

/** The subject type of benchmark operations (an opaque reference; nothing is looked up). */
export const BENCH_SUBJECT_TYPE = 'bench';

/**
 * Counts how often each operation's handler ran: the evidence for "doubly executed" (count > 1) and, with the
 * database's `succeeded` rows, for "lost".
 */
export class ExecutionLog {
  readonly #runs = new Map<string, number>();
  /** Records one run of `id`. */
  record(id: string): void {
    this.#runs.set(id, (this.#runs.get(id) ?? 0) + 1);
  }
  /** Distinct ids that ran at least once. */
  get distinct(): number {
    return this.#runs.size;
  }
  /** Ids that ran more than once. */
  duplicated(): string[] {
    return [...this.#runs].filter(([, n]) => n > 1).map(([id]) => id);
  }
  /** Whether `id` ran at least once. */
  ran(id: string): boolean {
    return this.#runs.has(id);
  }
}

/**
 * The benchmark's no-op task: its handler records the run and returns at once, so the figures measure durable-ops'
 * own work (admission, claim, heartbeat, completion with notification and capacity release) and nothing else.
 * @param onRun called with the operation id at the start of every run (and `'end'` when it returns).
 * @param type its task type. @default {@link BENCH_TASK_TYPE}
 */
export function benchTask(onRun: (operationId: string, phase: 'start' | 'end') => void, type: string = BENCH_TASK_TYPE): TaskDefinition {
  return defineTask({
    type,
    paramsSchema: z.object({ i: z.number().int().min(0) }).strict(),
    timeoutMs: 60_000,
    async run({ operationId }) {
      onRun(operationId, 'start');
      onRun(operationId, 'end');
    },
  });
}

/**
 * The operation policy of the benchmark: the production defaults (30 s lease, 10 s heartbeat, 15 min queued deadline,
 * 60 s wake-up re-send, 30 days retention) unless overridden. A no-op run never lives long enough to heartbeat on its
 * timer: between claim and completion `runClaimedOperation` only reads the row once, to recheck cancellation.
 */
export function benchPolicy(overrides: Partial<OperationPolicy> = {}): OperationPolicy {
  return Object.freeze({
    leaseMs: 30_000,
    heartbeatMs: 10_000,
    maxAttempts: 3,
    retry: Object.freeze({ baseDelayMs: 5_000, maxDelayMs: 300_000 }),
    deadlineMs: 900_000,
    wakeupResendMs: 60_000,
    maxManualRetries: 5,
    retentionMs: 30 * 86_400_000,
    ...overrides,
  });
}

/**
 * Limits that never refuse or hold back the benchmark's load: per owner `⌈ops ÷ owners⌉` active (every operation of an
 * owner may be active at once, if the workers fall behind), global `ops`, and a running limit of `workers` per owner,
 * so the fair-share limit never binds — the peers it is compared with have none (`npm run bench -- --fairness`
 * measures the limit). Built with `capacityPolicy` directly: `CAPACITY_GLOBAL` caps the environment's value at 10,000,
 * below a full run's 20,000.
 */
export function benchCapacity(ops: number, owners: number, workers: number): CapacityPolicy {
  return capacityPolicy({ perOwner: Math.max(1, Math.ceil(ops / owners)), global: Math.max(1, ops), retryAfterSeconds: 1, runningPerOwner: Math.max(1, workers) });
}

/**
 * The limits of a deployment that sets no `CAPACITY_*` variable and no capacity file — the configuration's defaults
 * (`loadConfig({})`: 10 active per owner, 1,000 global, 4 running per owner, no admission rate, at the time of
 * writing), read through the library so they follow its defaults.
 */
export function deployedCapacity(): CapacityPolicy {
  return loadCapacityPolicy(loadConfig({}));
}

/**
 * The deps of admission and claim called one at a time, without workers or SQS (the cost phases): leases, deadlines
 * and wake-up re-sends of an hour, far beyond a phase's length, so nothing expires or falls due for the sweeper while
 * a phase runs; the wake-ups go nowhere (counted), logs and metrics nowhere.
 */
export function sequentialDeps(registry: TaskRegistry, capacity: CapacityPolicy) {
  const policy = benchPolicy({ leaseMs: 3_600_000, deadlineMs: 3_600_000, wakeupResendMs: 3_600_000 });
  return { registry, policy, capacity, wakeups: new CountingWakeups(), logger: silentLogger, metrics: noopMetrics };
}

/** The owner id of benchmark owner `k` (0-based). */
export function benchOwner(k: number): string {
  return `bench-owner-${String(k).padStart(3, '0')}`;
}

/**
 * A {@link WakeupSender} standing in for SQS (an external service): it sends nothing, counts the messages it would have
 * sent and hands each to `deliver` — the benchmark's in-memory stand-in for the queue the worker Lambdas poll. Unlike
 * the real sender it does not validate the messages (the services build them from typed values).
 */
export class CountingWakeups implements WakeupSender {
  /** Messages sent so far. */
  sent = 0;
  readonly #deliver: (message: WakeupMessage) => void;
  constructor(deliver: (message: WakeupMessage) => void = () => {}) {
    this.#deliver = deliver;
  }
  async send(messages: readonly WakeupMessage[]): Promise<void> {
    this.sent += messages.length;
    for (const message of messages) this.#deliver(message);
  }
}
