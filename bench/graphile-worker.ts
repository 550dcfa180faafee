import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, makeWorkerUtils, run, type RunnerOptions, type WorkerUtils } from 'graphile-worker';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { noCleanups, type Cleanups } from './cleanups.js';
import { ExecutionLog } from './durable-ops-deps.js';
import { dropStaleSchemas } from './pg-boss.js';

/** `plain`: graphile-worker's defaults; `batched`: its documented batching options ({@link BATCHING}). */
export type GraphileWorkerMode = 'plain' | 'batched';

/**
 * The batching options of graphile-worker's performance page (worker.graphile.org/docs/performance#batching): the pool
 * locks up to 500 jobs per fetch and hands them to its workers from memory, and completions (failures) are written in
 * one statement per event-loop turn (a delay of 0 ms) instead of one each.
 */
const BATCHING: RunnerOptions['preset'] = Object.freeze({ worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } });

/** The no-op task's identifier. */
const TASK = 'bench_noop';

/** Schemas of this phase are `<SCHEMA_PREFIX><pid>_<mode>`. */
const SCHEMA_PREFIX = 'graphile_worker_bench_';

/** Options of {@link runGraphileWorker}. */
export interface GraphileWorkerOptions {
  readonly connectionString: string;
  readonly mode: GraphileWorkerMode;
  readonly ops: number;
  readonly producers: number;
  /** The runner's concurrency (jobs in flight at once). */
  readonly concurrency: number;
  /** Give up (and count the rest as lost) after this many ms. */
  readonly timeoutMs: number;
  /** Where the schema's removal is registered while it exists. */
  readonly cleanups?: Cleanups;
}

/** What {@link runGraphileWorker} measured and checked. */
export interface GraphileWorkerResult {
  readonly mode: GraphileWorkerMode;
  readonly ops: number;
  /** First `addJob` started → the last job's row deleted (graphile-worker deletes a job when it completes), in s. */
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly serverVersion: string;
  /** CPU per job over the timed window (bench process: producers, runner, graphile-worker and pg; server: PostgreSQL). */
  readonly cpu: CpuPerOp;
  /** Jobs added whose row is gone from graphile-worker's job table afterwards. */
  readonly completed: number;
  readonly lost: number;
  readonly doubleExecuted: number;
  readonly problems: readonly string[];
}

/**
 * graphile-worker 0.17 on PostgreSQL: its own schema (`graphile_worker_bench_<pid>_<mode>`, dropped afterwards), no
 * cron items; `producers` concurrent `addJob` loops (one job per call, through one shared `WorkerUtils`, the documented
 * way to add many jobs) for `ops` jobs while one runner of `concurrency` runs a no-op task that records each job id.
 * The runner learns of new jobs by LISTEN/NOTIFY, its own wake-up. The window ends when every job has run and its row is
 * gone (graphile-worker completes a job by deleting it, after the task returns; the harness polls for that every ms).
 */
export async function runGraphileWorker(options: GraphileWorkerOptions): Promise<GraphileWorkerResult> {
  const schema = `${SCHEMA_PREFIX}${process.pid}_${options.mode}`;
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString: options.connectionString, schema, maxPoolSize: options.producers, logger });
  const query = (sql: string) => utils.withPgClient((client) => client.query(sql));
  const cleanups = options.cleanups ?? noCleanups;
  const cleanupName = `graphile-worker schema ${schema}`;
  const dropSchema = async () => void (await query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  cleanups.set(cleanupName, dropSchema);
  try {
    await dropStaleSchemas(query, SCHEMA_PREFIX);
    const [{ server_version: serverVersion } = { server_version: 'unknown' }] = (await query('SHOW server_version')).rows as { server_version: string }[];
    const executions = new ExecutionLog();
    const errors: string[] = [];
    // `run` migrates the schema and starts the runner before the timed window.
    const runner = await run({
      connectionString: options.connectionString,
      schema,
      concurrency: options.concurrency,
      // One connection per job in flight, and one for LISTEN (the performance page's setting: concurrency + 1).
      maxPoolSize: options.concurrency + 1,
      logger,
      noHandleSignals: true,
      parsedCronItems: [],
      ...(options.mode === 'batched' ? { preset: BATCHING } : {}),
      taskList: { [TASK]: (_payload, helpers) => void executions.record(helpers.job.id) },
    });
    runner.events.on('job:error', ({ error }) => errors.push(`job error: ${String(error)}`));
    runner.events.on('pool:fatalError', ({ error }) => errors.push(`pool fatal error: ${String(error)}`));
    runner.events.on('worker:fatalError', ({ error }) => errors.push(`worker fatal error: ${String(error)}`));
    runner.promise.catch((error: unknown) => errors.push(`runner failed: ${String(error)}`));
    try {
      // Open the producers' connections before timing.
      await Promise.all(Array.from({ length: options.producers }, () => query('SELECT 1')));
      return await measure(options, schema, utils, executions, errors, serverVersion);
    } finally {
      await runner.stop();
    }
  } finally {
    try {
      await dropSchema();
      cleanups.delete(cleanupName);
    } finally {
      await utils.release();
    }
  }
}

/** The timed window of {@link runGraphileWorker}, with the runner already started; `errors` fills as the runner reports them. */
async function measure(
  options: GraphileWorkerOptions,
  schema: string,
  utils: WorkerUtils,
  executions: ExecutionLog,
  errors: readonly string[],
  serverVersion: string,
): Promise<GraphileWorkerResult> {
  const remainingJobs = async () => {
    const { rows } = await utils.withPgClient((client) => client.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM ${schema}._private_jobs`));
    return rows[0]?.n ?? Number.NaN;
  };
  let next = 0;
  let added = 0;
  const cpu = cpuWindow('postgresql', availableParallelism());
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  const producer = async () => {
    for (let i = next++; i < options.ops; i = next++) {
      await utils.addJob(TASK, { i });
      added++;
    }
  };
  const production = await Promise.allSettled(Array.from({ length: options.producers }, producer));
  // Every job has run once its id is recorded, and has completed once its row is gone.
  while (performance.now() < deadline && !(executions.distinct >= added && (await remainingJobs()) === 0)) await sleep(1);
  const cpuPerOp = cpu(options.ops);
  const seconds = (performance.now() - started) / 1000;

  const remaining = await remainingJobs();
  const completed = added - remaining;
  const doubleExecuted = executions.duplicated().length;
  const lost = options.ops - Math.min(completed, executions.distinct);
  const problems: string[] = [];
  const failure = production.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) problems.push(`addJob failed: ${String(failure.reason)}`);
  if (lost > 0) problems.push(`${lost} jobs lost (${remaining} rows left in ${schema}._private_jobs, ${executions.distinct} distinct jobs ran)`);
  if (doubleExecuted > 0) problems.push(`${doubleExecuted} jobs executed more than once`);
  if (errors.length > 0) problems.push(`${errors.length} graphile-worker errors, first: ${errors[0]}`);
  return { mode: options.mode, ops: options.ops, seconds, opsPerSec: completed / seconds, serverVersion, cpu: cpuPerOp, completed, lost, doubleExecuted, problems };
}
