import type { Config } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { DatabaseUnavailableError } from '../errors.js';
import { createApiHandler } from '../http/api-handler.js';
import { localDevSecret } from './dev-secret.js';
import { withLocalOperatorRule } from './dev-operator.js';
import { startLocalHttpServer } from './local-http-server.js';
import { describeError } from '../logger.js';
import type { Observability } from '../observability/observability.js';
import { createSqsClient } from '../queue/wakeup-sender.js';
import { assertMatchedRowCounts } from '../db/row-count-check.js';
import { createRuntime, type Runtime, type RuntimeOverrides } from '../runtime.js';
import { sweepWith } from '../sweeper/sweeper-handler.js';
import { createWorkerHandler } from '../worker/worker-handler.js';
import { startLocalQueue, type LocalQueue } from './local-queue.js';
import { startLocalModels, type LocalModels } from './local-models.js';
import { startSqsPoller } from './sqs-poller.js';

/** Worker Lambda timeout the local stack simulates, in ms (the Lambda maximum, as in serverless.yml). */
const WORKER_TIMEOUT_MS = 900_000;

/** The results bucket the in-process emulator gets when `RESULTS_BUCKET` is unset. */
const LOCAL_RESULTS_BUCKET = 'durable-ops-results';

/** A running local stack. */
export interface LocalStack {
  /** Base URL of the HTTP API, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /**
   * The HS256 secret its server verifies dev tokens with (`localDevSecret`: `DEV_JWT_SECRET`, or the one generated in
   * the local data directory): sign a token for it with `signDevToken(sub, stack.devJwtSecret)`.
   */
  readonly devJwtSecret: string;
  readonly runtime: Runtime;
  /** Stops the HTTP server, the poller (waiting for in-flight work), the sweeper timer, the queue and the pool. */
  stop(): Promise<void>;
}

/**
 * What an application adds to the local stack: its own task types and recovery modules (`appOverrides` of a
 * `DurableOpsApp` builds both). @default the built-in registry the config asks for (`createRegistry`) and the built-in
 * recovery modules (`createRecoveryModules`)
 */
export type LocalStackOptions = Pick<RuntimeOverrides, 'registry' | 'recoveryModules'>;

/**
 * Starts the whole stack in one process (docs/design.md §9): migrations, an SQS queue + DLQ and a results bucket (in-process
 * fauxqs, which then also serves `RESULTS_BUCKET`/`S3_ENDPOINT` and `SQS_DLQ_URL` — the operator API's redrive —
 * unless `SQS_QUEUE_URL` points at a real or emulated queue; then results and the DLQ follow the configuration), the
 * same API, worker and sweeper handlers as the Lambdas —
 * the API behind a local HTTP server that answers only loopback `Host` names and `LOCAL_ALLOWED_HOSTS`, verifies dev JWTs
 * as the API Gateway JWT authorizer would, with `DEV_JWT_SECRET` or else the secret generated on first start in the local
 * data directory (`localDevSecret`), and answers CORS for `CORS_ALLOWED_ORIGINS` as API Gateway's CORS configuration
 * would — the worker fed
 * by an SQS poller honouring partial batch responses — with serverless.yml's execution model, one message per
 * invocation and at most 10 invocations at once (`SQS_POLLER_DEFAULTS`) — the sweeper on a `SWEEP_INTERVAL_SECONDS`
 * timer. With `AI_TASKS=1` it also serves the Lambda Invoke API and, unless `MODEL_LOCAL_URL` is set, a deterministic stand-in
 * model (see `startLocalModels`).
 *
 * Every part logs through `observability.logger` — the same Powertools JSON lines as the Lambdas — and the handlers use
 * its middlewares, so each local invocation publishes its EMF metrics to stdout as in AWS (set
 * `POWERTOOLS_METRICS_DISABLED=true` to silence them). One process serves every local invocation, so a line's Lambda
 * context fields name the invocation that started last.
 * @param options the task types and recovery modules to serve: an application's (`startLocalApp` of `durable-ops/local`)
 * or, by default, the built-in ones.
 * @throws {ConfigError} for invalid configuration; driver errors if the database cannot be reached or migrated.
 */
export async function startLocalStack(config: Config, observability: Observability, options: LocalStackOptions = {}): Promise<LocalStack> {
  const { logger, metrics } = observability;
  // First, before anything is started that would have to be stopped again should the secret file be unreadable.
  const devJwtSecret = await localDevSecret(config);
  let queue: LocalQueue | undefined;
  let queueUrl = config.SQS_QUEUE_URL;
  let endpoint = config.SQS_ENDPOINT;
  let dlqUrl = config.SQS_DLQ_URL;
  let results = { RESULTS_BUCKET: config.RESULTS_BUCKET, S3_ENDPOINT: config.S3_ENDPOINT };
  if (!queueUrl) {
    const bucket = config.RESULTS_BUCKET ?? LOCAL_RESULTS_BUCKET;
    queue = await startLocalQueue({ visibilityTimeoutSeconds: (6 * WORKER_TIMEOUT_MS) / 1000, region: config.AWS_REGION, buckets: [bucket] });
    queueUrl = queue.queueUrl;
    endpoint = queue.endpoint;
    dlqUrl = queue.dlqUrl;
    results = { RESULTS_BUCKET: bucket, S3_ENDPOINT: queue.endpoint };
  }
  const models: LocalModels | undefined = config.AI_TASKS ? await startLocalModels(config, logger) : undefined;
  const effective: Config = Object.freeze({ ...config, SQS_QUEUE_URL: queueUrl, SQS_ENDPOINT: endpoint, SQS_DLQ_URL: dlqUrl, ...results, ...models?.config });
  // No operator rule configured: the local one, which dev operator tokens pass (lib/local/dev-operator.ts).
  const runtime = createRuntime(withLocalOperatorRule(effective), { logger, metrics, ...options });
  await migrateToLatest(runtime.store);
  try {
    await assertMatchedRowCounts(runtime.store);
  } catch (error) {
    await runtime.close();
    throw error;
  }

  const client = queue?.client ?? createSqsClient({ region: config.AWS_REGION, ...(endpoint ? { endpoint } : {}) });
  const poller = startSqsPoller({ client, queueUrl, handler: createWorkerHandler(runtime, observability), functionTimeoutMs: WORKER_TIMEOUT_MS, logger });
  const server = await startLocalHttpServer({
    port: config.PORT,
    handler: createApiHandler(runtime, observability),
    devJwtSecret,
    logger,
    corsAllowedOrigins: config.CORS_ALLOWED_ORIGINS,
    allowedHosts: config.LOCAL_ALLOWED_HOSTS,
  });

  let sweeping: Promise<unknown> = Promise.resolve();
  const runSweep = () => {
    sweeping = sweepWith(runtime)
      // An outage was already logged at WARN by sweepWith.
      .catch((error: unknown) => (error instanceof DatabaseUnavailableError ? undefined : logger.error('sweep failed', describeError(error))))
      .finally(() => metrics.publish());
  };
  runSweep();
  const timer = setInterval(() => {
    void sweeping.then(runSweep);
  }, config.SWEEP_INTERVAL_SECONDS * 1000);

  return {
    url: server.url,
    devJwtSecret,
    runtime,
    stop: async () => {
      clearInterval(timer);
      await server.close();
      await poller.stop();
      await sweeping;
      if (queue) await queue.stop();
      else client.destroy();
      await runtime.close();
      await models?.stop();
    },
  };
}
