import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Connection } from 'mysql2/promise';
import { prepareAdmissionPools } from '../lib/capacity/capacity.js';
import {
  admitOperation,
  capacityPolicy,
  claimNextOperation,
  completeOperation,
  enterOwnerScope,
  DEFAULT_OWNER_SETTINGS,
  migrateToLatest,
  openStore,
  OwnerScope,
  runSweepOnce,
  TaskRegistry,
  WorkerScope,
  type Store,
} from '../lib/index.js';
import { noCleanups, type Cleanups } from './cleanups.js';
import { cpuShare, cpuSnapshot, type CpuShare } from './cpu.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner, benchTask, sequentialDeps } from './durable-ops-deps.js';
import { fillHistory } from './history-fill.js';
import { benchDatabaseName, connect, createBenchDatabase, globalStatus, type BenchDatabase } from './mariadb.js';
import { capturingStore, compareTimings, explainStatements, planProblems, seedPlanBacklog, type CapturedStatement, type StatementPlan, type StatementTiming } from './query-plans.js';
import { ratio, summarize, type LatencySummary } from './stats.js';

/** Options of {@link runHistoryCost}. */
export interface HistoryCostOptions {
  readonly serverUrl: string;
  /** History rows of the first measurement (10,000). */
  readonly smallRows: number;
  /** History rows of the second (1,000,000; quick: 100,000). */
  readonly largeRows: number;
  readonly owners: number;
  /** Queued operations present while claims are timed ("a few hundred"). */
  readonly queued: number;
  /** Timed rounds per size: each times one admission, one claim and one sweeper pass. */
  readonly rounds: number;
  /** Where the database's drop is registered while it exists. */
  readonly cleanups?: Cleanups;
}

/** The three timed paths. */
export type CostPath = 'admission' | 'claim' | 'sweep';

/** Timings at one history size, in ms. */
export interface CostAtSize {
  readonly historyRows: number;
  /**
   * Seconds it took to load this size's history (the first size, or the growth to the second) and for the server to
   * write the load back to disk (see {@link writtenBack}).
   */
  readonly fillSeconds: number;
  readonly admission: LatencySummary;
  readonly claim: LatencySummary;
  readonly sweep: LatencySummary;
  /**
   * InnoDB buffer-pool misses (pages read from disk, `Innodb_buffer_pool_reads`) per call: what grows when a path's
   * working set outgrows the buffer pool. Server-wide, so other clients' reads count too.
   */
  readonly diskReadsPerCall: Readonly<Record<CostPath, number>>;
  /** CPU shares while this size was timed (another workload on the machine makes it noisy). */
  readonly cpu: CpuShare;
  /**
   * A reference: one committed single-row UPDATE of a one-row table, timed in the same rounds. Its growth is not
   * history's (the table never grows) but the machine's drift between the two measurements.
   */
  readonly reference: LatencySummary;
}

/** What {@link runHistoryCost} measured and checked. */
export interface HistoryCostResult {
  readonly small: CostAtSize;
  readonly large: CostAtSize;
  /** Median at the large size ÷ median at the small size. */
  readonly ratios: Readonly<Record<CostPath, number>>;
  /** The reference commit's ratio: how much the machine itself drifted between the two sizes (1.0 = not at all). */
  readonly drift: number;
  /** The worst of the three ratios. */
  readonly historyCostRatio: number;
  /** `EXPLAIN` of every statement one claim, one admission and one sweeper pass sent at the large size. */
  readonly plans: readonly StatementPlan[];
  /** Each statement's median time at both sizes (untimed profiling rounds after the timed ones), largest growth first. */
  readonly statements: readonly StatementTiming[];
  readonly problems: readonly string[];
}

/** The history database and what a timed round needs. */
interface Target {
  readonly database: BenchDatabase;
  readonly store: Store;
  readonly owners: number;
  admitted: number;
}

/**
 * Cost growth with history. On a fresh database: `smallRows` terminal rows of history, `queued` operations
 * waiting, then `rounds` rounds each timing one admission, one claim and one sweeper pass (`runSweepOnce`; nothing to
 * do: the history is within retention and no lease, deadline or wake-up is due) — the claimed operation is completed
 * between the claim and the sweep, untimed, so every round starts from the same state — then the history grows to `largeRows`
 * and the same rounds run again. Each path's ratio is its median at the large size ÷ its median at the small size.
 * Finally one admission, claim and sweeper pass run through capturing stores and every statement they sent is
 * `EXPLAIN`ed — after a backlog for the claim's and the sweeper's batch reads is written (`seedPlanBacklog`) — and a
 * full scan, or a claim or sweeper statement that sorts or reads beyond its batch, is reported as a problem
 * (`planProblems`).
 */
export async function runHistoryCost(options: HistoryCostOptions): Promise<HistoryCostResult> {
  const database = await createBenchDatabase(options.serverUrl, benchDatabaseName('history'));
  const cleanups = options.cleanups ?? noCleanups;
  cleanups.set(`database ${database.name}`, () => database.drop());
  const store = openStore(database.url, { poolSize: 4 });
  const status = await connect(options.serverUrl);
  const problems: string[] = [];
  try {
    await migrateToLatest(store);
    await sql`CREATE TABLE bench_reference (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB`.execute(store.db);
    await sql`INSERT INTO bench_reference (id, n) VALUES (1, 0)`.execute(store.db);
    const target: Target = { database, store, owners: options.owners, admitted: 0 };
    const deps = costDeps(options);
    const fillSmall = (await fillHistory(options.serverUrl, database.name, { from: 0, to: options.smallRows, owners: options.owners })) + (await writtenBack(status));
    await Promise.all(Array.from({ length: 4 }, () => sql`SELECT 1`.execute(store.db)));
    for (let k = 0; k < options.owners; k++) await prepareAdmissionPools(store, deps.capacity, BENCH_TASK_TYPE, benchOwner(k), DEFAULT_OWNER_SETTINGS.plan);
    for (let i = 0; i < options.queued; i++) await admit(target, deps, `queued-${i}`);
    const small = await measure(target, deps, options, status, options.smallRows, fillSmall, problems);
    const smallStatements = await profile(target, deps, Math.ceil(options.rounds / 2));
    const fillLarge =
      (await fillHistory(options.serverUrl, database.name, { from: options.smallRows, to: options.largeRows, owners: options.owners })) + (await writtenBack(status));
    const large = await measure(target, deps, options, status, options.largeRows, fillLarge, problems);
    const largeStatements = await profile(target, deps, Math.ceil(options.rounds / 2));
    const plans = await explainPaths(target, largeStatements, options.serverUrl, deps.policy.retentionMs);
    for (const plan of plans) problems.push(...planProblems(plan));
    const growth = (path: CostPath) => ratio(large[path].p50, small[path].p50);
    const ratios = { admission: growth('admission'), claim: growth('claim'), sweep: growth('sweep') };
    return {
      small,
      large,
      ratios,
      drift: ratio(large.reference.p50, small.reference.p50),
      historyCostRatio: Math.max(ratios.admission, ratios.claim, ratios.sweep),
      plans,
      statements: compareTimings(smallStatements, largeStatements),
      problems,
    };
  } finally {
    await status.end();
    await store.destroy();
    await database.drop();
    cleanups.delete(`database ${database.name}`);
  }
}

/** How long {@link writtenBack} waits at most, in ms. */
const WRITE_BACK_MAX_MS = 120_000;

/**
 * Waits until InnoDB has written a bulk load back: until its dirty buffer-pool pages (`Innodb_buffer_pool_pages_dirty`,
 * server-wide) stop falling for 3 s, or {@link WRITE_BACK_MAX_MS}. They never reach 0 (a few hundred stay below the
 * adaptive-flushing mark), so "no longer falling" is the test. Timing right after loading 1,000,000 rows would time
 * the page cleaner's write-back of the load (≈ 5,000 dirty pages, about 13–15 s here) along with each path — a cost
 * of the load, not of the history; the write-back the timed paths cause themselves is still timed. Returns the seconds
 * waited.
 */
export async function writtenBack(status: Connection): Promise<number> {
  const started = performance.now();
  const dirty = () => globalStatus(status, 'Innodb_buffer_pool_pages_dirty');
  let last = await dirty();
  // The page cleaner lowers the count in steps about a second apart: three seconds without a fall means it is done.
  for (let still = 0; still < 6 && performance.now() - started < WRITE_BACK_MAX_MS; ) {
    await sleep(500);
    const now = await dirty();
    still = now < last ? 0 : still + 1;
    last = now;
  }
  return (performance.now() - started) / 1000;
}

/** The deps of admission, claim and sweep here ({@link sequentialDeps}). */
function costDeps(options: HistoryCostOptions) {
  // The queue stays at `queued` (each round admits one and claims one, which then completes): room to spare.
  const perOwner = Math.ceil(options.queued / options.owners) + 10;
  return sequentialDeps(new TaskRegistry().register(benchTask(() => {})), capacityPolicy({ perOwner, global: options.owners * perOwner, retryAfterSeconds: 1 }));
}

type CostDeps = ReturnType<typeof costDeps>;

/** Rows per sweeper batch in every sweeper pass here (the `SWEEP_BATCH_SIZE` default). */
const SWEEP_BATCH = 200;

/** Untimed rounds before each size's timed ones: the JIT has compiled the paths and the buffer pool holds what they touch. */
const WARM_UP_ROUNDS = 50;

async function admit(target: Target, deps: CostDeps, key: string): Promise<void> {
  const i = target.admitted++;
  const scope = new OwnerScope(target.store, benchOwner(i % target.owners));
  await admitOperation(scope, deps, key, { taskType: BENCH_TASK_TYPE, subject: { type: BENCH_SUBJECT_TYPE, id: key }, params: { i } });
}

/** {@link WARM_UP_ROUNDS} untimed rounds, then `rounds` timed rounds at the current history size. */
async function measure(
  target: Target,
  deps: CostDeps,
  options: HistoryCostOptions,
  status: Connection,
  historyRows: number,
  fillSeconds: number,
  problems: string[],
): Promise<CostAtSize> {
  const poolReads = () => globalStatus(status, 'Innodb_buffer_pool_reads');
  const samples: Record<CostPath | 'reference', number[]> = { admission: [], claim: [], sweep: [], reference: [] };
  const reads: Record<CostPath, number> = { admission: 0, claim: 0, sweep: 0 };
  let cpu0 = cpuSnapshot();
  for (let round = -WARM_UP_ROUNDS; round < options.rounds; round++) {
    if (round === 0) cpu0 = cpuSnapshot();
    const timed = await sampleRound(target, deps, `r${historyRows}-${round}`, poolReads);
    if (timed.problem) problems.push(`${historyRows} rows: ${timed.problem}`);
    if (round < 0) continue;
    for (const path of ['admission', 'claim', 'sweep'] as const) {
      samples[path].push(timed.ms[path]);
      reads[path] += timed.reads[path];
    }
    samples.reference.push(timed.referenceMs);
  }
  return {
    historyRows,
    fillSeconds,
    admission: summarize(samples.admission),
    claim: summarize(samples.claim),
    sweep: summarize(samples.sweep),
    diskReadsPerCall: { admission: reads.admission / options.rounds, claim: reads.claim / options.rounds, sweep: reads.sweep / options.rounds },
    cpu: cpuShare(cpu0, cpuSnapshot(), availableParallelism()),
    reference: summarize(samples.reference),
  };
}

/**
 * Times one admission, one claim and one sweeper pass on `target`, in that order, and counts the buffer-pool misses of
 * each (`poolReads` reads the server's counter between the timed calls, never inside one).
 */
async function sampleRound(target: Target, deps: CostDeps, key: string, poolReads: () => Promise<number>) {
  const r0 = await poolReads();
  const t0 = performance.now();
  await admit(target, deps, key);
  const t1 = performance.now();
  const r1 = await poolReads();
  const t2 = performance.now();
  const worker = new WorkerScope(target.store);
  const claim = await claimNextOperation(worker, deps);
  const t3 = performance.now();
  const r2 = await poolReads();
  // Untimed: the claimed operation finishes, so every round starts from the same state (the queue, and the capacity
  // slots the sweeper's reclaim pass reads, stay the same size; the history grows by one row).
  if (claim) await completeOperation(enterOwnerScope(worker, claim), claim);
  const r2b = await poolReads();
  const t4 = performance.now();
  const counts = await runSweepOnce({ ...deps, store: target.store, batchSize: SWEEP_BATCH, timeBudgetMs: 20_000 });
  const t5 = performance.now();
  const r3 = await poolReads();
  const t6 = performance.now();
  await sql`UPDATE bench_reference SET n = n + 1 WHERE id = 1`.execute(target.store.db);
  const t7 = performance.now();
  const busy = Object.entries(counts).filter(([name, n]) => name !== 'budgetExhausted' && n !== 0);
  const problem = !claim ? 'a claim found nothing with operations queued' : busy.length > 0 ? `the sweeper had work: ${JSON.stringify(counts)}` : undefined;
  return { ms: { admission: t1 - t0, claim: t3 - t2, sweep: t5 - t4 }, referenceMs: t7 - t6, reads: { admission: r1 - r0, claim: r2 - r1, sweep: r3 - r2b }, problem };
}

/**
 * `rounds` untimed rounds (admission, claim, completion, sweeper pass) through capturing stores: every statement the
 * paths send, with its time. The completion's owner scope is built on its capturing store directly (what
 * `enterOwnerScope` does with the worker's store).
 */
async function profile(target: Target, deps: CostDeps, rounds: number): Promise<CapturedStatement[]> {
  const statements: CapturedStatement[] = [];
  const admitting = { ...target, store: capturingStore(target.store, 'admission', statements) };
  const claimer = new WorkerScope(capturingStore(target.store, 'claim', statements));
  const completing = capturingStore(target.store, 'complete', statements);
  const sweeping = capturingStore(target.store, 'sweep', statements);
  for (let round = 0; round < rounds; round++) {
    await admit(admitting, deps, `p${admitting.admitted}`);
    const claim = await claimNextOperation(claimer, deps);
    if (claim) await completeOperation(new OwnerScope(completing, claim.ownerUserId), claim);
    await runSweepOnce({ ...deps, store: sweeping, batchSize: SWEEP_BATCH, timeBudgetMs: 20_000 });
  }
  target.admitted = admitting.admitted;
  return statements;
}

/**
 * `EXPLAIN`s the statements the paths sent (on the database they ran on), with a backlog of `2 × SWEEP_BATCH` rows
 * written first for each batch read of the claim and the sweeper (`seedPlanBacklog`; the timed rounds are over, and the
 * database is dropped afterwards).
 */
async function explainPaths(target: Target, statements: readonly CapturedStatement[], serverUrl: string, retentionMs: number): Promise<StatementPlan[]> {
  const connection = await connect(serverUrl, target.database.name);
  try {
    await seedPlanBacklog(connection, { batch: SWEEP_BATCH, retentionMs, taskType: 'bench.backlog' });
    return await explainStatements(connection, statements);
  } finally {
    await connection.end();
  }
}
