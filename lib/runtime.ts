import { loadCapacityPolicy } from './capacity/capacity-policy.js';
import type { CapacityPolicy } from './capacity/capacity-policy.js';
import type { Config } from './config.js';
import { ConfigError } from './errors.js';
import { operatorRuleFromConfig, type OperatorRule } from './http/operator-identity.js';
import { createProcessLogger, type Logger } from './logger.js';
import { noopMetrics, type OpsMetrics } from './observability/metrics.js';
import { assertMatchedRowCounts } from './db/row-count-check.js';
import { openStore, type Store } from './db/store.js';
import { policyFromConfig, type OperationPolicy } from './operations/operation-policy.js';
import { createSqsClient, SqsWakeupSender, type WakeupSender } from './queue/wakeup-sender.js';
import { deadLetterQueueFromConfig, type DeadLetterQueue } from './queue/dead-letter-queue.js';
import type { ResultObjects } from './results/result-objects.js';
import { createS3Client } from './results/s3-client.js';
import { createRecoveryModules, type RecoveryModuleRegistry } from './recovery/recovery-modules.js';
import { createModelRoutes, type ModelRoutes } from './ai/model-routes.js';
import { strategySnapshotTask } from './features/strategy-snapshot/strategy-snapshot-task.js';
import { demoWaitTask } from './tasks/demo-wait.js';
import { TaskRegistry } from './tasks/task-registry.js';

/**
 * Everything the three entry points (API, worker, sweeper) share, built once per process (per Lambda cold start)
 * from the {@link Config}. Nothing is created at import time.
 */
export interface Runtime {
  readonly config: Config;
  readonly store: Store;
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
  readonly capacity: CapacityPolicy;
  readonly wakeups: WakeupSender;
  /** The worker queue's DLQ, for the operator's redrive; present only when `SQS_DLQ_URL` (and `SQS_QUEUE_URL`) is set. */
  readonly deadLetters?: DeadLetterQueue;
  /** The modules that write durable recovery operations, with their reconciliation actions (docs/design.md §8). */
  readonly recoveryModules: RecoveryModuleRegistry;
  readonly logger: Logger;
  /** Where the services count lifecycle metrics; whoever built the runtime publishes them (see `Observability`). */
  readonly metrics: OpsMetrics;
  /** Where tasks publish result objects; present only when `RESULTS_BUCKET` is set. */
  readonly results?: ResultObjects;
  /** The model routes of model tasks (docs/design.md §5), with their process-local circuit breakers. */
  readonly models: ModelRoutes;
  /** Who is an operator (`OPERATOR_*`, `lib/http/operator-identity.ts`); `undefined`: nobody, every operator route is a 404. */
  readonly operatorRule: OperatorRule | undefined;
  /** Closes the database pool (and the S3, DLQ and Lambda clients, if any). */
  close(): Promise<void>;
}

/**
 * Parts of a {@link Runtime} a caller may supply instead of having them built from config. An `Observability` is one
 * (its logger and metrics): the Lambda entry points and the local stack pass theirs.
 */
export interface RuntimeOverrides {
  readonly wakeups?: WakeupSender;
  /** @default a Powertools process logger (`createProcessLogger`) */
  readonly logger?: Logger;
  /** @default `noopMetrics`: metrics exist only where someone publishes them */
  readonly metrics?: OpsMetrics;
  /** The task types this process serves. @default {@link createRegistry}`(config)`: the built-in ones the config asks for */
  readonly registry?: TaskRegistry;
  /**
   * The modules that write durable recovery operations, with their reconciliation actions (docs/design.md §8): an
   * application that writes its own ledger records registers them here. @default {@link createRecoveryModules}`()`
   */
  readonly recoveryModules?: RecoveryModuleRegistry;
}

/**
 * The task registry the configuration asks for: `demo.wait` only when `DEMO_TASKS=1`, `strategy.snapshot` only when
 * `AI_TASKS=1`.
 * @throws {ConfigError} when `AI_TASKS=1` and no local model route (`MODEL_LOCAL_URL`) is configured.
 */
export function createRegistry(config: Config): TaskRegistry {
  const registry = new TaskRegistry();
  if (config.DEMO_TASKS) registry.register(demoWaitTask);
  if (config.AI_TASKS) {
    if (!config.MODEL_LOCAL_URL) throw new ConfigError('AI_TASKS=1 needs MODEL_LOCAL_URL (the local model route)');
    registry.register(strategySnapshotTask);
  }
  return registry;
}

/**
 * Builds a {@link Runtime}. The SQS client targets `SQS_ENDPOINT` when set (local emulator), else the AWS region; with
 * `RESULTS_BUCKET` set, an S3 client (targeting `S3_ENDPOINT` when set) backs {@link Runtime.results}; with `SQS_DLQ_URL`
 * set, a client of its own backs {@link Runtime.deadLetters}; the model routes
 * come from `MODEL_LOCAL_*` / `MODEL_EXTERNAL_*` (a `lambda:` route's client is made on first need).
 * @throws {ConfigError} when no wake-up sender is supplied and `SQS_QUEUE_URL` is unset, `DATABASE_URL` is invalid, or
 * the capacity file is unreadable or invalid.
 */
export function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Runtime {
  const capacity = loadCapacityPolicy(config);
  const registry = overrides.registry ?? createRegistry(config);
  const models = createModelRoutes(config);
  const store = openStore(config.DATABASE_URL, { poolSize: config.DB_POOL_SIZE });
  let wakeups = overrides.wakeups;
  if (!wakeups) {
    if (!config.SQS_QUEUE_URL) throw new ConfigError('SQS_QUEUE_URL is required');
    const client = createSqsClient({ region: config.AWS_REGION, ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT } : {}) });
    wakeups = new SqsWakeupSender({ client, queueUrl: config.SQS_QUEUE_URL });
  }
  const results: ResultObjects | undefined = config.RESULTS_BUCKET
    ? { s3: createS3Client({ region: config.AWS_REGION, ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}) }), bucket: config.RESULTS_BUCKET, store }
    : undefined;
  const deadLetters = deadLetterQueueFromConfig(config);
  return {
    config,
    store,
    registry,
    policy: policyFromConfig(config),
    capacity,
    wakeups,
    recoveryModules: overrides.recoveryModules ?? createRecoveryModules(),
    logger: overrides.logger ?? createProcessLogger(),
    metrics: overrides.metrics ?? noopMetrics,
    results,
    ...(deadLetters ? { deadLetters } : {}),
    models,
    operatorRule: operatorRuleFromConfig(config),
    close: async () => {
      results?.s3.destroy();
      deadLetters?.client.destroy();
      models.close();
      await store.destroy();
    },
  };
}

/**
 * {@link createRuntime}, then the start-up checks of the store: the MariaDB connection must count matched rows
 * (`assertMatchedRowCounts`). What the Lambda handlers and the local stack start with.
 * @throws {ConfigError} as {@link createRuntime}, or when the connection's row counts do not mean matched rows (the
 * runtime is closed first).
 */
export async function startRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const runtime = createRuntime(config, overrides);
  try {
    await assertMatchedRowCounts(runtime.store);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  return runtime;
}

/**
 * A memoised, lazily built value: the first call runs `build`, later calls share its promise; a failed build is
 * retried on the next call. Lambda handlers use it so a cold start builds the runtime once, on first invocation.
 */
export function lazy<T>(build: () => Promise<T> | T): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= Promise.resolve()
      .then(build)
      .catch((error: unknown) => {
        pending = undefined;
        throw error;
      });
    return pending;
  };
}
