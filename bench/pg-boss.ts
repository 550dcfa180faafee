import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import PgBoss from 'pg-boss';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { isAlive, noCleanups, type Cleanups } from './cleanups.js';
import { ExecutionLog } from './durable-ops-deps.js';

/** Where the pg-boss run finds PostgreSQL: `BENCH_POSTGRES_URL`, else the loopback default. */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Options of {@link runPgBoss}. */
export interface PgBossOptions {
  readonly connectionString: string;
  readonly ops: number;
  readonly producers: number;
  readonly workers: number;
  /** Jobs per `fetch` (and per `complete`). */
  readonly batchSize: number;
  /** Give up (and count the rest as lost) after this many ms. */
  readonly timeoutMs: number;
  /** Where the schema's removal is registered while it exists. */
  readonly cleanups?: Cleanups;
}

/** What {@link runPgBoss} measured and checked. */
export interface PgBossResult {
  readonly batchSize: number;
  readonly ops: number;
  /** First `send` started → last `complete` returned. */
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly serverVersion: string;
  /** CPU per job over the timed window (bench process: producers, workers, pg-boss and pg; server: PostgreSQL). */
  readonly cpu: CpuPerOp;
  /** Jobs in `completed` state afterwards, read from pg-boss's job table. */
  readonly completed: number;
  readonly lost: number;
  readonly doubleExecuted: number;
  readonly problems: readonly string[];
}

/**
 * pg-boss 10 on PostgreSQL, measured at its best: its own schema (`bench_pgboss_<pid>_<batch>`, dropped
 * afterwards), maintenance and scheduling off; `producers` concurrent `send` loops for `ops` jobs while `workers`
 * loops `fetch` up to `batchSize` jobs, run a no-op handler (which records each job id) and `complete` them in one
 * call. pg-boss's own `work()` polls with a sleep (≥ 0.5 s) after an empty fetch; here an empty fetch instead waits for
 * the next `send` (in-process signal, at most 5 ms) — the equivalent of the SQS wake-up durable-ops' workers get.
 */
export async function runPgBoss(options: PgBossOptions): Promise<PgBossResult> {
  const schema = `bench_pgboss_${process.pid}_${options.batchSize}`;
  const queue = 'bench-noop';
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema,
    max: options.producers + options.workers + 2,
    supervise: false,
    schedule: false,
    migrate: true,
  });
  const bossErrors: string[] = [];
  boss.on('error', (error) => bossErrors.push(String(error)));
  const cleanups = options.cleanups ?? noCleanups;
  const dropSchema = async () => void (await boss.getDb().executeSql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`, []));
  cleanups.set(`pg-boss schema ${schema}`, dropSchema);
  await boss.start();
  try {
    await boss.createQueue(queue);
    const db = boss.getDb();
    await dropStaleSchemas((sql) => db.executeSql(sql, []), 'bench_pgboss_');
    const [{ server_version: serverVersion } = { server_version: 'unknown' }] = (await db.executeSql('SHOW server_version', [])).rows as { server_version: string }[];
    // Open the pool's connections before timing.
    await Promise.all(Array.from({ length: options.producers + options.workers }, () => db.executeSql('SELECT 1', [])));

    const executions = new ExecutionLog();
    const signal = new SendSignal();
    let next = 0;
    let sent = 0;
    let completed = 0;
    let sendsDone = false;
    let lastCompletion = 0;
    const cpu = cpuWindow('postgresql', availableParallelism());
    const started = performance.now();
    const deadline = started + options.timeoutMs;
    const producer = async () => {
      for (let i = next++; i < options.ops; i = next++) {
        const id = await boss.send(queue, { i });
        if (id === null) throw new Error('pg-boss send returned no id');
        sent++;
        signal.notify();
      }
    };
    const worker = async () => {
      while (completed < (sendsDone ? sent : options.ops) && performance.now() < deadline) {
        const jobs = await boss.fetch<{ i: number }>(queue, { batchSize: options.batchSize });
        if (jobs.length === 0) {
          await signal.wait(5);
          continue;
        }
        for (const job of jobs) executions.record(job.id);
        await boss.complete(queue, jobs.map((job) => job.id));
        completed += jobs.length;
        lastCompletion = performance.now();
      }
    };
    const workersDone = Promise.all(Array.from({ length: options.workers }, worker));
    const production = await Promise.allSettled(Array.from({ length: options.producers }, producer));
    sendsDone = true;
    signal.notify();
    await workersDone;
    const cpuPerOp = cpu(options.ops);
    const seconds = ((lastCompletion || performance.now()) - started) / 1000;

    const states = (await db.executeSql(`SELECT state, COUNT(*)::int AS n FROM ${schema}.job WHERE name = $1 GROUP BY state`, [queue])).rows as { state: string; n: number }[];
    const completedRows = states.find((s) => s.state === 'completed')?.n ?? 0;
    const doubleExecuted = executions.duplicated().length;
    const lost = options.ops - Math.min(completedRows, executions.distinct);
    const problems: string[] = [];
    const failure = production.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) problems.push(`send failed: ${String(failure.reason)}`);
    if (lost > 0) problems.push(`${lost} jobs lost (states: ${JSON.stringify(states)})`);
    if (doubleExecuted > 0) problems.push(`${doubleExecuted} jobs executed more than once`);
    if (bossErrors.length > 0) problems.push(`${bossErrors.length} pg-boss errors, first: ${bossErrors[0]}`);
    return {
      batchSize: options.batchSize,
      ops: options.ops,
      seconds,
      opsPerSec: completedRows / seconds,
      serverVersion,
      cpu: cpuPerOp,
      completed: completedRows,
      lost,
      doubleExecuted,
      problems,
    };
  } finally {
    try {
      await dropSchema();
      cleanups.delete(`pg-boss schema ${schema}`);
    } finally {
      await boss.stop({ graceful: false, close: true, wait: true });
    }
  }
}

/** Runs one SQL statement on PostgreSQL and returns its rows (pg-boss's `executeSql`, a pg client's `query`). */
export type ExecuteSql = (sql: string) => Promise<{ rows: unknown[] }>;

/**
 * Drops the schemas `<prefix><pid>_<suffix>` of earlier runs that were killed before their cleanup ran (their process
 * is gone); the schemas of live processes, this one's included, stay.
 * @param prefix lower-case letters and underscores only (it is spliced into the SQL), e.g. `bench_pgboss_`.
 */
export async function dropStaleSchemas(executeSql: ExecuteSql, prefix: string): Promise<void> {
  if (!/^[a-z_]+$/.test(prefix)) throw new RangeError(`schema prefix must be lower-case letters and underscores, got ${prefix}`);
  const { rows } = await executeSql(`SELECT nspname FROM pg_namespace WHERE nspname LIKE '${prefix.replace(/_/g, '\\_')}%'`);
  const name = new RegExp(`^${prefix}(\\d+)_\\w+$`);
  for (const { nspname } of rows as { nspname: string }[]) {
    const pid = Number(name.exec(nspname)?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !isAlive(pid)) await executeSql(`DROP SCHEMA IF EXISTS ${nspname} CASCADE`);
  }
}

/** Wakes the workers waiting for work when a producer has sent a job. */
class SendSignal {
  readonly #waiters = new Set<() => void>();
  notify(): void {
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
  }
  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(wake);
        resolve();
      }, timeoutMs);
      this.#waiters.add(wake);
    });
  }
}
