/**
 * `npm run chaos [-- --quick]`: the reliability harness (README's Reliability section). Starts a private MariaDB, the
 * in-process SQS/S3 emulator, the HTTP API and the sweeper in this process and several worker processes
 * (`chaos-stack.ts`); drives an admission load with cancels and retries through the API while injecting faults at
 * random (SIGKILLed workers, killed connections, a crashed and restarted MariaDB, dropped and duplicated messages,
 * heartbeats delayed past the lease, workers partitioned from MariaDB past the lease, skewed clocks); lets the system drain; then checks the recorded history against
 * the invariants (`invariants.ts`) and prints a summary whose last line is one JSON object. Exit code 0 only with zero
 * violations and no worker crash; 1 otherwise or when the run itself failed; 2 for a bad command line; 130 when
 * interrupted (after cleaning up).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ACTIVE_STATUSES } from '../lib/operations/lifecycle/operation-status.js';
import { sweepWith } from '../lib/sweeper/sweeper-handler.js';
import { AdmissionLoad } from './admission-load.js';
import { pickEndedOperation } from './chaos-schema.js';
import { CHAOS_DATABASE, startChaosStack, type ChaosStack } from './chaos-stack.js';
import { fileLogger } from './file-logger.js';
import { FaultInjector } from './faults.js';
import { readHistory, type ChaosHistory } from './history.js';
import { checkHistory } from './invariants.js';
import { startMariadbInstance } from './mariadb-instance.js';
import { parseChaosArgs, UsageError, USAGE, type ChaosOptions } from './options.js';
import { Random } from './random.js';
import { renderSummary, summaryOf } from './summary.js';

const log = (line: string) => process.stderr.write(`[chaos] ${line}\n`);

/** Undo steps of what the run started, by name, run in reverse order at the end — or on SIGINT/SIGTERM. */
const pending = new Map<string, () => Promise<unknown>>();
async function runPending(): Promise<void> {
  for (const [, undo] of [...pending].reverse()) await undo().catch(() => undefined);
  pending.clear();
}

/** `work` with up to `tries` attempts, a second apart (the final reads follow a crash-restart of the server). */
async function retried<T>(tries: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= tries) throw error;
      await delay(1_000);
    }
  }
}

/**
 * Times `count` scheduled faults spread evenly over a phase of `durationMs` from `started`, each `offset` (0..1) into
 * its slot.
 */
function scheduleEvenly(started: number, durationMs: number, count: number, offset: number): number[] {
  return Array.from({ length: count }, (_, i) => started + ((i + offset) * durationMs) / count);
}

/**
 * Faults and load for `durationSeconds`, with the MariaDB restarts spread evenly over it (the first at mid-slot) and
 * the network partitions too (the first at 30 % of its slot; each runs in the background, and any still in progress
 * at the end is healed).
 */
async function faultPhase(stack: ChaosStack, injector: FaultInjector, load: AdmissionLoad, options: ChaosOptions, random: Random): Promise<void> {
  const started = Date.now();
  const end = started + options.durationSeconds * 1000;
  const restartAt = scheduleEvenly(started, options.durationSeconds * 1000, options.restarts, 0.5);
  const partitionAt = scheduleEvenly(started, options.durationSeconds * 1000, options.partitions, 0.3);
  let lastReport = started;
  while (Date.now() < end) {
    if (restartAt.length > 0 && Date.now() >= (restartAt[0] as number)) {
      restartAt.shift();
      log('crashing and restarting MariaDB');
      await injector.restartMariadb();
    } else if (partitionAt.length > 0 && Date.now() >= (partitionAt[0] as number)) {
      partitionAt.shift();
      await injector.partition();
    } else await injector.injectRandom();
    if (Date.now() - lastReport > 30_000) {
      lastReport = Date.now();
      log(`${Math.round((Date.now() - started) / 1000)} s: ${load.counts.admitted} admitted, faults ${JSON.stringify(faultCounts(stack, injector))}`);
    }
    await delay(random.int(2 * options.faultEveryMs));
  }
  await injector.healPartitions();
}

function faultCounts(stack: ChaosStack, injector: FaultInjector) {
  return { ...injector.counts, delay_heartbeat: stack.fleet.stalls, clock_skew: stack.fleet.skews };
}

/** Waits until no operation is active, or `seconds` passed. */
async function drain(stack: ChaosStack, seconds: number): Promise<void> {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const row = await stack.runtime.store.db
      .selectFrom('operations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ACTIVE_STATUSES)
      .executeTakeFirst()
      .catch(() => undefined);
    if (row && Number(row.n) === 0) return;
    await delay(1_000);
  }
}

async function run(options: ChaosOptions): Promise<number> {
  const random = new Random(options.seed);
  const mariadb = await startMariadbInstance();
  if (!mariadb) throw new Error('this machine has no mariadbd / mariadb-install-db: the chaos harness needs its own private MariaDB server');
  pending.set('mariadb', () => mariadb.stop({ keepData: options.keep }));
  const dir = join('.chaos', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { recursive: true });
  log(`mode ${options.mode}, seed ${options.seed}, ${options.durationSeconds} s of faults, ${options.workers} workers, ${options.restarts} restarts, ${options.partitions} partitions; logs in ${dir}`);
  const logger = fileLogger(join(dir, 'api-and-sweeper.log'));
  const stack = await startChaosStack(mariadb, { workers: options.workers, logDir: dir, logger }, (name, undo) => pending.set(name, undo));
  const load = new AdmissionLoad({ clients: stack.clients, random, perSecond: options.rate, concurrency: Math.max(4, Math.ceil(options.rate)), keyPrefix: `chaos-${dir.slice(7)}` });
  const injector = new FaultInjector({
    fleet: stack.fleet,
    mariadb,
    admin: stack.admin,
    database: CHAOS_DATABASE,
    sqs: stack.queue.client,
    queueUrl: stack.queue.queueUrl,
    load,
    pickEnded: () => pickEndedOperation(stack.runtime.store.db),
    random,
    leaseMs: stack.leaseMs,
    proxies: stack.proxies,
    log,
  });

  const started = Date.now();
  let sweeping = true;
  let sweepErrors = 0;
  const sweeper = (async () => {
    while (sweeping) {
      await sweepWith(stack.runtime).catch(() => (sweepErrors += 1));
      await delay(stack.config.SWEEP_INTERVAL_SECONDS * 1000);
    }
  })();
  const loadDone = load.run();
  await faultPhase(stack, injector, load, options, random);
  load.stop();
  await loadDone;
  for (const slot of stack.fleet.liveSlots()) stack.fleet.send(slot, { type: 'skew', ms: 0 });
  log(`fault phase over: ${load.counts.admitted} admitted; draining (up to ${options.drainSeconds} s)`);
  await drain(stack, options.drainSeconds);
  await stack.fleet.stop(options.mode === 'quick' ? 10_000 : 30_000);
  sweeping = false;
  await sweeper;
  const recorded = await stack.recorder.calls();
  const history: ChaosHistory = await retried(3, async () => {
    await sweepWith(stack.runtime);
    return { ...(await readHistory(stack.runtime.store, load.admitted, recorded.calls)), apiAnswers: { ...stack.answers } };
  });
  writeFileSync(join(dir, 'history.json'), JSON.stringify(history));
  const check = checkHistory(history);
  const summary = summaryOf({
    options,
    seconds: (Date.now() - started) / 1000,
    load: load.counts,
    faults: faultCounts(stack, injector),
    faultErrors: recorded.refused > 0 ? { ...injector.errors, recorder_refused_call: recorded.refused } : injector.errors,
    sweepErrors,
    apiAnswers: history.apiAnswers ?? {},
    workerCrashes: stack.fleet.unexpectedExits,
    check,
    historyFile: join(dir, 'history.json'),
  });
  process.stdout.write(`${renderSummary(summary)}\n${JSON.stringify(summary)}\n`);
  if (options.keep) log(`kept: the server's data directory ${mariadb.dataDir} (database ${CHAOS_DATABASE}) and the logs in ${dir}`);
  return check.violations.length === 0 && stack.fleet.unexpectedExits === 0 ? 0 : 1;
}

// The AWS SDK's notice about Node 22 is noise in the summary (its clients are created in this process).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the workers and the private MariaDB`);
    // What is still running fails as its server goes away: expected, not worth a stack trace.
    process.on('unhandledRejection', () => {});
    process.on('uncaughtException', () => {});
    void runPending().finally(() => process.exit(130));
  });
}
try {
  process.exitCode = await run(parseChaosArgs(process.argv.slice(2)));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message ? `${error.message}\n` : ''}${USAGE}\n`);
    process.exitCode = error.message ? 2 : 0;
  } else {
    process.stderr.write(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
} finally {
  await runPending();
}
