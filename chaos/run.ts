/**
 * `npm run chaos [-- --quick]`: the reliability harness of issue 8. Starts a private MariaDB, the in-process SQS/S3
 * emulator, the HTTP API and the sweeper in this process and several worker processes; drives an admission load with
 * cancels and retries through the API while injecting faults at random (SIGKILLed workers, killed connections, a
 * crashed and restarted MariaDB, dropped and duplicated messages, heartbeats delayed past the lease, skewed clocks);
 * lets the system drain; then checks the recorded history against the invariants (`invariants.ts`) and prints a
 * summary whose last line is one JSON object. Exit code 0 only with zero violations.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { createConnection, type Connection } from 'mysql2/promise';
import { loadConfig } from '../lib/config.js';
import { migrateToLatest } from '../lib/db/migrate.js';
import { signDevToken } from '../lib/http/auth.js';
import { createApiHandler } from '../lib/http/api-handler.js';
import { startLocalHttpServer } from '../lib/http/local-http-server.js';
import { startLocalQueue } from '../lib/local/local-queue.js';
import { ACTIVE_STATUSES } from '../lib/operations/operation-status.js';
import { createRuntime } from '../lib/runtime.js';
import { sweepWith } from '../lib/sweeper/sweeper-handler.js';
import { TaskRegistry } from '../lib/tasks/task-registry.js';
import { AdmissionLoad } from './admission-load.js';
import { ApiClient } from './api-client.js';
import { createChaosSchema } from './chaos-schema.js';
import { chaosTask } from './chaos-task.js';
import { fileLogger } from './file-logger.js';
import { FaultInjector } from './faults.js';
import { WorkerFleet } from './fleet.js';
import { readHistory } from './history.js';
import { checkHistory } from './invariants.js';
import { startMariadbInstance, type MariadbInstance } from './mariadb-instance.js';
import { parseChaosArgs, UsageError, USAGE, type ChaosOptions } from './options.js';
import { Random } from './random.js';
import { renderSummary, summaryOf } from './summary.js';

const OWNERS = 20;
const DATABASE = 'chaos';
const BUCKET = 'chaos-results';

/** The configuration every process of the run shares (short lease and sweep interval, so faults heal within seconds). */
function chaosEnv(databaseUrl: string, queue: { endpoint: string; queueUrl: string }, secret: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    SQS_QUEUE_URL: queue.queueUrl,
    SQS_ENDPOINT: queue.endpoint,
    RESULTS_BUCKET: BUCKET,
    S3_ENDPOINT: queue.endpoint,
    AWS_ACCESS_KEY_ID: 'chaos',
    AWS_SECRET_ACCESS_KEY: 'chaos',
    LEASE_SECONDS: '5',
    HEARTBEAT_SECONDS: '1',
    SWEEP_INTERVAL_SECONDS: '1',
    RETRY_BASE_SECONDS: '1',
    RETRY_MAX_SECONDS: '4',
    MAX_ATTEMPTS: '4',
    QUEUED_DEADLINE_SECONDS: '300',
    WAKEUP_RESEND_SECONDS: '5',
    CAPACITY_PER_OWNER: '500',
    CAPACITY_GLOBAL: '10000',
    DB_POOL_SIZE: '6',
    DEV_JWT_SECRET: secret,
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

/** Repeats `work` every `everyMs` until `until()` is true; never throws (errors are counted). */
async function every(everyMs: number, until: () => boolean, work: () => Promise<void>, errors: { n: number }): Promise<void> {
  while (!until()) {
    await work().catch(() => {
      errors.n += 1;
    });
    await delay(everyMs);
  }
}

async function run(options: ChaosOptions): Promise<number> {
  const runId = new Date().toISOString().replace(/[:.]/g, '-');
  const dir = join('.chaos', runId);
  mkdirSync(dir, { recursive: true });
  const log = (line: string) => process.stderr.write(`[chaos] ${line}\n`);
  log(`mode ${options.mode}, seed ${options.seed}, ${options.durationSeconds} s of faults, ${options.workers} workers; logs in ${dir}`);
  const random = new Random(options.seed);
  const mariadb: MariadbInstance | undefined = await startMariadbInstance();
  if (!mariadb) throw new UsageError('this machine has no mariadbd / mariadb-install-db: the chaos harness needs a private MariaDB server');
  const cleanups: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    cleanups.push(() => (options.keep ? Promise.resolve() : mariadb.stop()));
    let adminConnection: Connection | undefined;
    const admin = async () => {
      if (!adminConnection) adminConnection = await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', connectTimeout: 5_000 });
      return adminConnection;
    };
    cleanups.push(async () => adminConnection?.destroy());
    await (await admin()).query(`CREATE DATABASE ${DATABASE}`);
    const databaseUrl = `mysql://root@127.0.0.1:${mariadb.port}/${DATABASE}`;
    const queue = await startLocalQueue({ visibilityTimeoutSeconds: 30, buckets: [BUCKET] });
    cleanups.push(() => queue.stop());
    const secret = randomBytes(32).toString('hex');
    const env = chaosEnv(databaseUrl, queue, secret);
    const config = loadConfig({ ...process.env, ...env });
    const registry = new TaskRegistry();
    registry.register(chaosTask({ worker: 'api', takeStall: () => 0, running: () => undefined }));
    const logger = fileLogger(join(dir, 'api-and-sweeper.log'));
    const runtime = createRuntime(config, { registry, logger });
    cleanups.push(() => runtime.close());
    await migrateToLatest(runtime.store);
    await createChaosSchema(runtime.store.db);
    const server = await startLocalHttpServer({ port: 0, handler: createApiHandler(runtime), devJwtSecret: secret, logger });
    cleanups.push(() => server.close());
    const fleet = new WorkerFleet({ size: options.workers, env, logDir: dir });
    await fleet.start();
    cleanups.push(() => fleet.stop(5_000));

    const clients = await Promise.all(
      Array.from({ length: OWNERS }, async (_, i) => {
        const owner = `chaos-owner-${String(i).padStart(2, '0')}`;
        return new ApiClient(server.url, owner, await signDevToken(owner, secret));
      }),
    );
    const load = new AdmissionLoad({ clients, random, perSecond: options.rate, concurrency: Math.max(4, Math.ceil(options.rate)), keyPrefix: `chaos-${runId}` });
    const injector = new FaultInjector({
      fleet,
      mariadb,
      admin: async () => {
        try {
          const connection = await admin();
          await connection.query('SELECT 1');
          return connection;
        } catch {
          adminConnection?.destroy();
          adminConnection = undefined;
          return admin();
        }
      },
      database: DATABASE,
      sqs: queue.client,
      queueUrl: queue.queueUrl,
      load,
      random,
      leaseMs: config.LEASE_SECONDS * 1000,
    });

    const started = Date.now();
    const faultsEnd = started + options.durationSeconds * 1000;
    let sweeping = true;
    const sweepErrors = { n: 0 };
    const sweeper = every(config.SWEEP_INTERVAL_SECONDS * 1000, () => !sweeping, () => sweepWith(runtime).then(() => undefined), sweepErrors);
    const loadDone = load.run();
    const restartAt = Array.from({ length: options.restarts }, (_, i) => started + ((i + 0.5) * options.durationSeconds * 1000) / options.restarts);
    let lastReport = started;
    while (Date.now() < faultsEnd) {
      if (restartAt.length > 0 && Date.now() >= (restartAt[0] as number)) {
        restartAt.shift();
        log('crashing and restarting MariaDB');
        await injector.restartMariadb();
      } else await injector.injectRandom();
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        log(`${Math.round((Date.now() - started) / 1000)} s: ${load.counts.admitted} admitted, faults ${JSON.stringify({ ...injector.counts, delay_heartbeat: fleet.stalls })}`);
      }
      await delay(random.int(2 * options.faultEveryMs));
    }
    load.stop();
    await loadDone;
    for (const slot of fleet.liveSlots()) fleet.send(slot, { type: 'skew', ms: 0 });
    log(`fault phase over: ${load.counts.admitted} admitted; draining (up to ${options.drainSeconds} s)`);
    const drainEnd = Date.now() + options.drainSeconds * 1000;
    let active = Number.POSITIVE_INFINITY;
    while (Date.now() < drainEnd) {
      const row = await runtime.store.db
        .selectFrom('operations')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', 'in', ACTIVE_STATUSES)
        .executeTakeFirst()
        .catch(() => undefined);
      active = Number(row?.n ?? active);
      if (active === 0) break;
      await delay(1_000);
    }
    await fleet.stop();
    sweeping = false;
    await sweeper;
    await sweepWith(runtime);
    const history = await readHistory(runtime.store, load.admitted);
    writeFileSync(join(dir, 'history.json'), JSON.stringify(history));
    const check = checkHistory(history);
    const summary = summaryOf({
      options,
      seconds: (Date.now() - started) / 1000,
      load: load.counts,
      faults: { ...injector.counts, delay_heartbeat: fleet.stalls },
      faultErrors: injector.errors,
      sweepErrors: sweepErrors.n,
      check,
      stillActive: active,
      historyFile: join(dir, 'history.json'),
    });
    process.stdout.write(`${renderSummary(summary)}\n${JSON.stringify(summary)}\n`);
    return check.violations.length === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
}

// The AWS SDK's notice about Node 22 is noise in the summary (its clients are created in this process).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
try {
  process.exitCode = await run(parseChaosArgs(process.argv.slice(2)));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message ? `${error.message}\n` : ''}${USAGE}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
}
