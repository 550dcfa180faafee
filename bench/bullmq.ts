import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { isAlive, noCleanups, type Cleanups } from './cleanups.js';
import { ExecutionLog } from './durable-ops-deps.js';
import { withFsyncAlways, type RedisPersistence } from './redis-persistence.js';

/** Where the BullMQ run finds Redis: `BENCH_REDIS_URL`, else the loopback default. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Options of {@link runBullmq}. */
export interface BullmqOptions {
  readonly redisUrl: string;
  readonly ops: number;
  readonly producers: number;
  /** The `Worker`'s concurrency. */
  readonly concurrency: number;
  /** Give up (and count the rest as lost) after this many ms. */
  readonly timeoutMs: number;
  /** Where the Redis settings restore and the queue's removal are registered while pending. */
  readonly cleanups?: Cleanups;
}

/** What {@link runBullmq} measured and checked. */
export interface BullmqResult {
  readonly ops: number;
  /** First `add` started → `ops` jobs completed. */
  readonly seconds: number;
  readonly opsPerSec: number;
  /** The persistence settings in force before the run (restored afterwards). */
  readonly previousPersistence: RedisPersistence;
  /** CPU per job over the timed window (bench process: producers, worker, BullMQ and ioredis; server: Redis). */
  readonly cpu: CpuPerOp;
  readonly completed: number;
  readonly lost: number;
  readonly doubleExecuted: number;
  readonly problems: readonly string[];
}

/**
 * BullMQ on Redis with `appendfsync always`: `producers` concurrent `add` loops for `ops` jobs into a queue of
 * its own (key prefix `bench-<pid>`, obliterated afterwards) and one `Worker` of `concurrency` running a no-op processor
 * (which records each job id), measured until `ops` jobs completed. Redis's persistence settings are switched for the
 * run and restored afterwards, also on failure.
 */
export async function runBullmq(options: BullmqOptions): Promise<BullmqResult> {
  await dropStaleQueues(options.redisUrl);
  return withFsyncAlways(options.redisUrl, (previous) => measure(options, previous), options.cleanups);
}

/** Deletes every key matching `pattern` (SCAN + UNLINK). */
async function deleteKeys(redisUrl: string, pattern: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  try {
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) deleted += await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
    return deleted;
  } finally {
    redis.disconnect();
  }
}

/**
 * Deletes the queues of earlier runs that were killed before their cleanup ran (key prefix `bench-<pid>` of a process
 * that is gone). Returns the prefixes removed.
 */
export async function dropStaleQueues(redisUrl: string): Promise<string[]> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const prefixes = new Set<string>();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', 'bench-*:bench-noop:*', 'COUNT', 1000);
      for (const key of keys) prefixes.add(key.slice(0, key.indexOf(':')));
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  const stale = [...prefixes].filter((prefix) => {
    const pid = Number(prefix.slice('bench-'.length));
    return Number.isInteger(pid) && pid !== process.pid && !isAlive(pid);
  });
  for (const prefix of stale) await deleteKeys(redisUrl, `${prefix}:*`);
  return stale;
}

async function measure(options: BullmqOptions, previousPersistence: RedisPersistence): Promise<BullmqResult> {
  const url = new URL(options.redisUrl);
  const connection = { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
  const prefix = `bench-${process.pid}`;
  const name = 'bench-noop';
  const executions = new ExecutionLog();
  const queue = new Queue(name, { connection, prefix });
  const worker = new Worker(name, async (job) => void executions.record(job.id ?? 'missing-id'), { connection, prefix, concurrency: options.concurrency, autorun: false });
  const cleanups = options.cleanups ?? noCleanups;
  // Interrupted: stop adding and working, then remove every key of the prefix (obliterate would race the adds).
  cleanups.set('bullmq queue', async () => {
    await Promise.allSettled([queue.disconnect(), worker.disconnect()]);
    await deleteKeys(options.redisUrl, `${prefix}:*`);
  });
  const workerErrors: string[] = [];
  worker.on('failed', (_job, error) => void workerErrors.push(String(error)));
  worker.on('error', (error) => void workerErrors.push(String(error)));
  try {
    await queue.waitUntilReady();
    await worker.waitUntilReady();
    let completed = 0;
    let finish: () => void = () => {};
    const allCompleted = new Promise<void>((resolve) => (finish = resolve));
    let lastCompletion = 0;
    worker.on('completed', () => {
      completed++;
      if (completed === options.ops) {
        lastCompletion = performance.now();
        finish();
      }
    });
    void worker.run();
    let next = 0;
    const cpu = cpuWindow('redis', availableParallelism());
    const started = performance.now();
    const producer = async () => {
      for (let i = next++; i < options.ops; i = next++) await queue.add('noop', { i });
    };
    const production = await Promise.allSettled(Array.from({ length: options.producers }, producer));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allCompleted, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, started + options.timeoutMs - performance.now()))))]);
    clearTimeout(timer);
    const cpuPerOp = cpu(options.ops);
    const seconds = ((lastCompletion || performance.now()) - started) / 1000;
    await worker.close();
    const counts = await queue.getJobCounts('completed', 'failed', 'active', 'wait', 'delayed');
    const completedJobs = counts.completed ?? 0;
    const doubleExecuted = executions.duplicated().length;
    const lost = options.ops - Math.min(completedJobs, executions.distinct);
    const problems: string[] = [];
    const failure = production.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) problems.push(`add failed: ${String(failure.reason)}`);
    if (lost > 0) problems.push(`${lost} jobs lost (counts: ${JSON.stringify(counts)})`);
    if (doubleExecuted > 0) problems.push(`${doubleExecuted} jobs executed more than once`);
    if (workerErrors.length > 0) problems.push(`${workerErrors.length} worker errors, first: ${workerErrors[0]}`);
    return { ops: options.ops, seconds, opsPerSec: completedJobs / seconds, previousPersistence, cpu: cpuPerOp, completed: completedJobs, lost, doubleExecuted, problems };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    cleanups.delete('bullmq queue');
    await queue.close();
  }
}
