import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DEFAULT_REDIS_URL, runBullmq } from './bullmq.js';
import { runCeiling, type CeilingResult } from './ceiling.js';
import { runDurableOps, type DurableOpsResult } from './durable-ops.js';
import { runFairness, type FairnessOptions } from './fairness.js';
import { fairnessHeadline, renderFairnessTable, writeFairnessResults } from './fairness-report.js';
import { runFloor, type FloorResult } from './floor.js';
import { runGraphileWorker, type GraphileWorkerMode, type GraphileWorkerResult } from './graphile-worker.js';
import { runHistoryCost } from './history-cost.js';
import { localMachine, type Machine } from './machine.js';
import { benchDatabaseName, createBenchDatabase, dropStaleBenchDatabases, mariadbServerUrl, mariadbSettings, mariadbVersion } from './mariadb.js';
import { runOccupancy } from './occupancy.js';
import { runOpenLoop } from './open-loop.js';
import { runOwnerGrowth } from './owner-growth.js';
import { renderTracingTable, runTracingCost } from './tracing-cost.js';
import { DEFAULT_POSTGRES_URL, runPgBoss, type PgBossResult } from './pg-boss.js';
import { redisVersion } from './redis-persistence.js';
import { checkTargets, headlineOf, problemsOf, renderSvg, renderTable, type BenchResults, type BenchSettings } from './report.js';

const USAGE = `usage: npm run bench [-- --quick] [-- --ops N] [-- --fairness] [-- --tracing]
  --quick     N = 2,000 operations, history 10,000 vs 100,000 rows, 3 s ceiling, 10 s open loop, 100 vs 10,000 owners,
              and the fairness run's short form (about 3.5 minutes)
  --ops N     operations per system (default 20,000; quick 2,000)
  --fairness  only the noisy-neighbour fairness run (MariaDB; about 2.5 minutes, with --quick about 1)
  --tracing   only the tracing-cost run (MariaDB): N operations (default 2,000) through the API and worker handlers per
              arm — tracing off, to a trace file, the SDK without export — each arm a child process, 5 rounds
              alternated (--quick: 3); prints the ratios against tracing off
MariaDB: DATABASE_URL (mysql://…) or mysql://root@127.0.0.1:3306; PostgreSQL: BENCH_POSTGRES_URL or ${DEFAULT_POSTGRES_URL};
Redis: BENCH_REDIS_URL or ${DEFAULT_REDIS_URL}.`;

/** Warm-up and window lengths of the fairness run, in s, per mode. */
const FAIRNESS_SIZES: Readonly<Record<BenchSettings['mode'], Pick<FairnessOptions, 'warmupSeconds' | 'phaseSeconds'>>> = {
  quick: { warmupSeconds: 3, phaseSeconds: 10 },
  full: { warmupSeconds: 5, phaseSeconds: 45 },
};

/**
 * Sizes of the open-loop latency phase (arrival seconds), the owner-growth phase (owners of its large arm, timed rounds
 * per arm) and the occupancy phase (timed rounds per arm), per mode. Quick mode grows to 10,000 owners, not 100,000:
 * filling 100,000 owners' history and state takes minutes.
 */
const LATENCY_SIZES: Readonly<Record<BenchSettings['mode'], { openLoopSeconds: number; largeOwners: number; ownerRounds: number; occupancyRounds: number }>> = {
  quick: { openLoopSeconds: 10, largeOwners: 10_000, ownerRounds: 100, occupancyRounds: 200 },
  full: { openLoopSeconds: 30, largeOwners: 100_000, ownerRounds: 200, occupancyRounds: 500 },
};

/** Finished operations in each owner's history in the owner-growth phase. */
const HISTORY_PER_OWNER = 3;

/** Operations per arm and run of `--tracing` unless `--ops` says otherwise. */
const TRACING_DEFAULT_OPS = 2_000;

/** Rounds of the tracing-cost run (each runs every arm once), per mode. */
const TRACING_ROUNDS: Readonly<Record<BenchSettings['mode'], number>> = { quick: 3, full: 5 };

/** How the command line sizes the run, and whether it is the fairness or the tracing-cost run alone. */
function parseArgs(argv: readonly string[]): { settings: BenchSettings; fairnessOnly: boolean; tracingOnly: boolean } {
  let quick = false;
  let fairnessOnly = false;
  let tracingOnly = false;
  let ops: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--quick') quick = true;
    else if (arg === '--fairness') fairnessOnly = true;
    else if (arg === '--tracing') tracingOnly = true;
    else if (arg === '--ops' || arg.startsWith('--ops=')) {
      const value = arg === '--ops' ? argv[++i] : arg.slice('--ops='.length);
      ops = Number(value);
      if (!Number.isInteger(ops) || ops < 100 || ops > 1_000_000) throw new UsageError(`--ops must be an integer 100..1000000, got ${value}`);
    } else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else throw new UsageError(`unknown option ${arg}`);
  }
  if (fairnessOnly && ops !== undefined) throw new UsageError('--ops does not apply to --fairness');
  if (fairnessOnly && tracingOnly) throw new UsageError('--fairness and --tracing are separate runs');
  const settings: BenchSettings = {
    mode: quick ? 'quick' : 'full',
    ops: ops ?? (tracingOnly || quick ? TRACING_DEFAULT_OPS : 20_000),
    owners: 100,
    concurrency: 16,
    sqsBatchSize: 10,
    ceilingSeconds: quick ? 3 : 10,
    historyRows: { small: 10_000, large: quick ? 100_000 : 1_000_000 },
    historyRounds: quick ? 100 : 200,
  };
  return { settings, fairnessOnly, tracingOnly };
}

class UsageError extends Error {}

/** Cleanups still pending (drop a database, restore Redis), by name; run on SIGINT/SIGTERM before exiting. */
const pending = new Map<string, () => Promise<void>>();

function runPending(): Promise<unknown> {
  return Promise.allSettled([...pending.values()].map((cleanup) => cleanup()));
}

async function main(): Promise<number> {
  let settings: BenchSettings;
  let fairnessOnly: boolean;
  let tracingOnly: boolean;
  try {
    ({ settings, fairnessOnly, tracingOnly } = parseArgs(process.argv.slice(2)));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message ? `${error.message}\n` : ''}${USAGE}`);
    return error.message ? 2 : 0;
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`[bench] ${signal}: cleaning up`);
      // The phase still running fails as its database, schema or queue goes away: expected, not worth a stack trace.
      process.on('unhandledRejection', () => {});
      process.on('uncaughtException', () => {});
      void runPending().finally(() => process.exit(130));
    });
  }
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const serverUrl = mariadbServerUrl();
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? DEFAULT_POSTGRES_URL;
  const redisUrl = process.env.BENCH_REDIS_URL ?? DEFAULT_REDIS_URL;
  const timeoutMs = Math.max(120_000, settings.ops * 30);
  const phaseSeconds: Record<string, number> = {};
  const failures: string[] = [];
  const phase = async <T>(name: string, work: () => Promise<T>): Promise<T | null> => {
    console.error(`[bench] ${name}…`);
    const t0 = performance.now();
    try {
      return await work();
    } catch (error) {
      failures.push(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      console.error(`[bench] ${name} failed:`, error);
      return null;
    } finally {
      phaseSeconds[name] = (performance.now() - t0) / 1000;
    }
  };

  const stale = await dropStaleBenchDatabases(serverUrl);
  if (stale.length > 0) console.error(`[bench] dropped databases of earlier runs that were killed: ${stale.join(', ')}`);
  const mariadb = await mariadbVersion(serverUrl);
  const serverSettings = await mariadbSettings(serverUrl);
  if (fairnessOnly) {
    return fairnessRun(settings.mode, serverUrl, { ...localMachine(), mariadb, mariadbSettings: serverSettings, postgresql: 'not used', redis: 'not used' });
  }
  if (tracingOnly) {
    return tracingRun(settings, serverUrl, { ...localMachine(), mariadb, mariadbSettings: serverSettings, postgresql: 'not used', redis: 'not used' });
  }
  const database = await createBenchDatabase(serverUrl, benchDatabaseName());
  pending.set(`database ${database.name}`, () => database.drop());
  let ceiling: CeilingResult | null = null;
  let durableOps: DurableOpsResult | null = null;
  // The durable-ops phase and its design floor run the same load, each in a database of its own.
  const load = (databaseUrl: string) => ({
    databaseUrl,
    serverUrl,
    ops: settings.ops,
    owners: settings.owners,
    admitters: settings.concurrency,
    workers: settings.concurrency,
    timeoutMs,
    cleanups: pending,
  });
  try {
    ceiling = await phase('ceiling', () => runCeiling(database.url, { serverUrl, concurrency: settings.concurrency, durationMs: settings.ceilingSeconds * 1000, cleanups: pending }));
    durableOps = await phase('durable-ops', () => runDurableOps({ ...load(database.url), sqsBatchSize: settings.sqsBatchSize }));
  } finally {
    await database.drop();
    pending.delete(`database ${database.name}`);
  }
  const sizes = LATENCY_SIZES[settings.mode];
  // Arrivals at half the throughput the durable-ops phase just reached, through the same set-up.
  const saturationOpsPerSec = durableOps?.opsPerSec;
  const openLoop =
    saturationOpsPerSec === undefined
      ? null
      : await phase('open loop', () =>
          runOpenLoop({
            serverUrl,
            saturationOpsPerSec,
            durationMs: sizes.openLoopSeconds * 1000,
            owners: settings.owners,
            admitters: settings.concurrency,
            workers: settings.concurrency,
            sqsBatchSize: settings.sqsBatchSize,
            drainMs: timeoutMs,
            cleanups: pending,
          }),
        );
  const floorDatabase = await createBenchDatabase(serverUrl, benchDatabaseName('floor'));
  pending.set(`database ${floorDatabase.name}`, () => floorDatabase.drop());
  let floor: FloorResult | null = null;
  try {
    floor = await phase('design floor', () => runFloor(load(floorDatabase.url)));
  } finally {
    await floorDatabase.drop();
    pending.delete(`database ${floorDatabase.name}`);
  }
  const pgBoss: PgBossResult[] = [];
  for (const batchSize of [1, 50]) {
    const result = await phase(`pg-boss batch ${batchSize}`, () =>
      runPgBoss({ connectionString: postgresUrl, ops: settings.ops, producers: settings.concurrency, workers: settings.concurrency, batchSize, timeoutMs, cleanups: pending }),
    );
    if (result) pgBoss.push(result);
  }
  const graphileWorker: GraphileWorkerResult[] = [];
  for (const mode of ['plain', 'batched'] satisfies GraphileWorkerMode[]) {
    const result = await phase(`graphile-worker ${mode}`, () =>
      runGraphileWorker({ connectionString: postgresUrl, mode, ops: settings.ops, producers: settings.concurrency, concurrency: settings.concurrency, timeoutMs, cleanups: pending }),
    );
    if (result) graphileWorker.push(result);
  }
  const bullmq = await phase('bullmq', () =>
    runBullmq({
      redisUrl,
      ops: settings.ops,
      producers: settings.concurrency,
      concurrency: settings.concurrency,
      timeoutMs,
      cleanups: pending,
    }),
  );
  const historyCost = await phase('history cost', () =>
    runHistoryCost({
      serverUrl,
      smallRows: settings.historyRows.small,
      largeRows: settings.historyRows.large,
      owners: settings.owners,
      queued: 300,
      rounds: settings.historyRounds,
      cleanups: pending,
    }),
  );
  const ownerGrowth = await phase('owner growth', () =>
    runOwnerGrowth({
      serverUrl,
      smallOwners: settings.owners,
      largeOwners: sizes.largeOwners,
      historyPerOwner: HISTORY_PER_OWNER,
      rounds: sizes.ownerRounds,
      cleanups: pending,
    }),
  );
  const occupancy = await phase('occupancy', () => runOccupancy({ serverUrl, rounds: sizes.occupancyRounds, cleanups: pending }));
  const fairness = settings.mode === 'quick' ? await phase('fairness', () => runFairness({ serverUrl, ...FAIRNESS_SIZES.quick, cleanups: pending })) : null;
  const redis = await redisVersion(redisUrl).catch(() => 'unknown');

  const partial = { settings, failures, ceiling, durableOps, floor, pgBoss, graphileWorker, bullmq, historyCost, fairness, openLoop, ownerGrowth, occupancy };
  const headline = headlineOf(partial);
  const readme = readFileSync(join(repoRoot(), 'README.md'), 'utf8');
  const results: BenchResults = {
    command: `npm run bench${settings.mode === 'quick' ? ' -- --quick' : ''}${process.argv.some((a) => a.startsWith('--ops')) ? ` --ops ${settings.ops}` : ''}`,
    startedAt,
    seconds: (performance.now() - started) / 1000,
    machine: { ...localMachine(), mariadb, mariadbSettings: serverSettings, postgresql: pgBoss[0]?.serverVersion ?? graphileWorker[0]?.serverVersion ?? 'unknown', redis },
    phaseSeconds,
    ...partial,
    headline,
    targets: checkTargets(headline, /^## Performance\b/m.test(readme)),
  };
  // latest.* is every run's; <mode>.* is the last run of that mode (the README shows full.svg, which a quick run
  // leaves alone).
  const dir = join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const m = results.machine;
  const json = `${JSON.stringify(results, null, 2)}\n`;
  const svg = renderSvg(headline, `N = ${settings.ops.toLocaleString('en-US')}, 16 workers; ${m.cores} × ${m.cpuModel}; MariaDB ${m.mariadb.split('-')[0]}; ${startedAt.slice(0, 10)}`);
  for (const name of ['latest', settings.mode]) {
    writeFileSync(join(dir, `${name}.json`), json);
    writeFileSync(join(dir, `${name}.svg`), svg);
  }
  const fairnessFiles = fairness ? writeFairnessResults(dir, settings.mode, { command: results.command, startedAt, machine: results.machine, fairness }) : [];
  console.log(renderTable(results));
  if (fairness) console.log(`\n${renderFairnessTable(fairness)}`);
  console.log(`\nWrote bench/results/latest.json, latest.svg, ${settings.mode}.json and ${settings.mode}.svg${fairnessFiles.map((f) => `, ${f}`).join('')}`);
  console.log(JSON.stringify(headline));
  return problemsOf(results).length === 0 ? 0 : 1;
}

/**
 * `--fairness`: the fairness run alone. Prints its report and a last JSON line ({@link fairnessHeadline}), writes
 * `bench/results/fairness-latest.*` and `fairness-<mode>.*`. Exit code 1 when a check failed or the run had problems.
 */
async function fairnessRun(mode: BenchSettings['mode'], serverUrl: string, machine: Machine): Promise<number> {
  const startedAt = new Date().toISOString();
  const fairness = await runFairness({ serverUrl, ...FAIRNESS_SIZES[mode], cleanups: pending });
  const dir = join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const command = `npm run bench -- --fairness${mode === 'quick' ? ' --quick' : ''}`;
  const written = writeFairnessResults(dir, mode, { command, startedAt, machine, fairness });
  console.log(renderFairnessTable(fairness));
  console.log(`\nWrote bench/results/${written.join(', ')}`);
  const headline = fairnessHeadline(fairness);
  console.log(JSON.stringify(headline));
  return headline.ok ? 0 : 1;
}

/**
 * `--tracing`: the tracing-cost run alone (`runTracingCost`). Prints its report and a last JSON line (the ratios),
 * writes `bench/results/tracing-latest.json` and `tracing-<mode>.json`. Exit code 1 when a run had problems.
 */
async function tracingRun(settings: BenchSettings, serverUrl: string, machine: Machine): Promise<number> {
  const startedAt = new Date().toISOString();
  const tracing = await runTracingCost({
    serverUrl,
    ops: settings.ops,
    owners: settings.owners,
    admitters: settings.concurrency,
    workers: settings.concurrency,
    sqsBatchSize: settings.sqsBatchSize,
    rounds: TRACING_ROUNDS[settings.mode],
    timeoutMs: Math.max(120_000, settings.ops * 30),
    cleanups: pending,
  });
  const dir = join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const command = `npm run bench -- --tracing${settings.mode === 'quick' ? ' --quick' : ''}${process.argv.some((a) => a.startsWith('--ops')) ? ` --ops ${settings.ops}` : ''}`;
  const json = `${JSON.stringify({ command, startedAt, machine, tracing }, null, 2)}\n`;
  const written = ['latest', settings.mode].map((name) => `tracing-${name}.json`);
  for (const name of written) writeFileSync(join(dir, name), json);
  console.log(renderTracingTable(tracing));
  console.log(`\nWrote bench/results/${written.join(', ')}`);
  console.log(JSON.stringify({ ok: tracing.problems.length === 0, ratios: tracing.ratios }));
  return tracing.problems.length === 0 ? 0 : 1;
}

function repoRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..');
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('[bench] failed:', error);
    void runPending().finally(() => {
      console.log(JSON.stringify({ ok: false, error: String(error) }));
      process.exit(1);
    });
  },
);
