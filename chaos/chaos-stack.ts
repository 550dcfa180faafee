import { randomBytes } from 'node:crypto';
import { createConnection, type Connection } from 'mysql2/promise';
import { loadConfig, type Config } from '../lib/config.js';
import { migrateToLatest } from '../lib/db/migrate.js';
import { signDevToken } from '../lib/local/dev-token.js';
import { createApiHandler } from '../lib/http/api-handler.js';
import { startLocalHttpServer } from '../lib/local/local-http-server.js';
import { startLocalQueue, type LocalQueue } from '../lib/local/local-queue.js';
import type { Logger } from '../lib/logger.js';
import { createRuntime, type Runtime } from '../lib/runtime.js';
import { taskPolicy } from '../lib/operations/operation-policy.js';
import { TaskRegistry } from '../lib/tasks/task-registry.js';
import { ApiClient } from './api-client.js';
import { startCallRecorder, type CallRecorder } from './call-recorder.js';
import { createChaosSchema } from './chaos-schema.js';
import { CHAOS_TASK_TYPE, chaosTask } from './chaos-task.js';
import { WorkerFleet } from './fleet.js';
import type { MariadbInstance } from './mariadb-instance.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** Owners of the admission load. */
const OWNERS = 20;
/** The chaos database on the private server. */
export const CHAOS_DATABASE = 'chaos';
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

/** Everything a chaos run drives, in this process and its workers. */
export interface ChaosStack {
  readonly config: Config;
  /** The chaos task's lease, in **ms** (its own `leaseSeconds` if it has one, else `LEASE_SECONDS`: 5 s). */
  readonly leaseMs: number;
  /** The API's and the sweeper's runtime (this process). */
  readonly runtime: Runtime;
  readonly queue: LocalQueue;
  readonly fleet: WorkerFleet;
  /** Slot `i`'s worker process reaches MariaDB only through `proxies[i]` (cut for a network partition). */
  readonly proxies: readonly TcpProxy[];
  /** The chaos task's external service: every call it made, stamped on arrival. */
  readonly recorder: CallRecorder;
  /** One API client per owner of the load. */
  readonly clients: readonly ApiClient[];
  /** Every answer the clients got (admissions, cancels, retries), by `answerKey`: `2xx`, `4xx`, `500`, `503`, `network`. */
  readonly answers: Readonly<Record<string, number>>;
  /** A connection to the private server, reopened when a fault or a restart broke it. */
  admin(): Promise<Connection>;
}

/**
 * Builds the system under test on `mariadb`: the chaos database (migrated, plus the harness's tables and triggers), the
 * SQS/S3 emulator, the runtime, the HTTP API, the recording service of the task's external calls, one loopback TCP
 * proxy to MariaDB per worker slot, `workers` worker processes (each through its proxy; this process's API and sweeper
 * connect directly) and one client per owner. Each part's undo is handed to `onCleanup` as soon as the part exists, so
 * an interrupted start leaves nothing behind.
 * @throws driver, emulator or spawn errors (what was started is already registered for cleanup).
 */
export async function startChaosStack(
  mariadb: MariadbInstance,
  options: { readonly workers: number; readonly logDir: string; readonly logger: Logger },
  onCleanup: (name: string, undo: () => Promise<unknown>) => void,
): Promise<ChaosStack> {
  let adminConnection: Connection | undefined;
  const connect = async () => {
    adminConnection ??= await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', connectTimeout: 5_000 });
    return adminConnection;
  };
  onCleanup('admin connection', async () => adminConnection?.destroy());
  const admin = async () => {
    try {
      const connection = await connect();
      await connection.query('SELECT 1');
      return connection;
    } catch {
      adminConnection?.destroy();
      adminConnection = undefined;
      return connect();
    }
  };
  await (await admin()).query(`CREATE DATABASE ${CHAOS_DATABASE}`);
  const queue = await startLocalQueue({ visibilityTimeoutSeconds: 30, buckets: [BUCKET] });
  onCleanup('queue', () => queue.stop());
  const secret = randomBytes(32).toString('hex');
  const env = chaosEnv(`mysql://root@127.0.0.1:${mariadb.port}/${CHAOS_DATABASE}`, queue, secret);
  const config = loadConfig({ ...process.env, ...env });
  const registry = new TaskRegistry();
  const runtime = createRuntime(config, { registry, logger: options.logger });
  // The API only validates chaos params; it never runs the task.
  registry.register(chaosTask({ worker: 'api', db: runtime.store.db, takeStall: () => 0, running: () => undefined }));
  onCleanup('runtime', () => runtime.close());
  await migrateToLatest(runtime.store);
  await createChaosSchema(runtime.store.db);
  const server = await startLocalHttpServer({ port: 0, handler: createApiHandler(runtime), devJwtSecret: secret, logger: options.logger });
  onCleanup('api server', () => server.close());
  const recorder = await startCallRecorder();
  onCleanup('call recorder', () => recorder.close());
  const proxies: TcpProxy[] = [];
  for (let i = 0; i < options.workers; i++) {
    const proxy = await startTcpProxy('127.0.0.1', mariadb.port);
    proxies.push(proxy);
    onCleanup(`database proxy ${i}`, () => proxy.close());
  }
  const fleet = new WorkerFleet({
    size: options.workers,
    env: { ...env, CHAOS_RECORDER_URL: recorder.url },
    slotEnv: (index) => ({ DATABASE_URL: `mysql://root@127.0.0.1:${(proxies[index] as TcpProxy).port}/${CHAOS_DATABASE}` }),
    logDir: options.logDir,
  });
  onCleanup('workers', () => fleet.stop(5_000));
  await fleet.start();
  const answers: Record<string, number> = {};
  const clients = await Promise.all(
    Array.from({ length: OWNERS }, async (_, i) => {
      const owner = `chaos-owner-${String(i).padStart(2, '0')}`;
      return new ApiClient(server.url, owner, await signDevToken(owner, secret), answers);
    }),
  );
  const leaseMs = taskPolicy(registry.get(CHAOS_TASK_TYPE), runtime.policy).leaseMs;
  return { config, leaseMs, runtime, queue, fleet, proxies, recorder, clients, answers, admin };
}
