import { appOverrides, type DurableOpsApp } from '../app/durable-ops-app.js';
import { loadConfig } from '../config.js';
import { createMigrateHandler, type MigrateFunctionResult } from '../db/migrate-function.js';
import { openStore } from '../db/store.js';
import { createApiHandler, type ApiHandler } from '../http/api-handler.js';
import { createProcessLogger } from '../logger.js';
import { createObservability, type Observability } from '../observability/observability.js';
import { lazy, startRuntime, type Runtime } from '../runtime.js';
import { createSweeperHandler } from '../sweeper/sweeper-handler.js';
import { createWorkerHandler } from '../worker/worker-handler.js';

/** The SQS worker Lambda's handler (`(event: SQSEvent, context) => Promise<SQSBatchResponse>`, middy). */
export type WorkerLambdaHandler = ReturnType<typeof createWorkerHandler>;

/** The scheduled sweeper Lambda's handler (`(event, context) => Promise<SweepCounts>`, middy). */
export type SweeperLambdaHandler = ReturnType<typeof createSweeperHandler>;

/** The migrate Lambda's handler: `{}` in, each migration's result out; it never throws (see `createMigrateHandler`). */
export type MigrateLambdaHandler = (event: unknown) => Promise<MigrateFunctionResult>;

/**
 * The runtime of `app`, built once, on the first call: the configuration read from `process.env` then (`loadConfig`),
 * the app's registry and recovery modules, the observability's logger and metrics, and `startRuntime`'s checks. A
 * failed build is retried on the next call (`lazy`).
 */
function lazyRuntime(app: DurableOpsApp, observability: Observability): () => Promise<Runtime> {
  return lazy(() => {
    const config = loadConfig(process.env);
    return startRuntime(config, { logger: observability.logger, metrics: observability.metrics, ...appOverrides(app, config) });
  });
}

/**
 * The owner API Lambda (docs/design.md §7, and the operator routes of §8) serving `app`'s task types, behind an API
 * Gateway HTTP API (payload 2.0) and its JWT authorizer. Call it once, at module level of the function's entry file:
 *
 * ```ts
 * export const handler = apiLambda(app);
 * ```
 *
 * It builds only the observability (a Powertools logger and EMF metrics; it reads `POWERTOOLS_*`); the runtime —
 * configuration from the environment, database pool, SQS client, registry — is built on the first authenticated
 * invocation, so an unauthenticated request is refused (401) before any configuration is read. Errors are RFC 9457
 * problem+json; a configuration or start-up failure (`ConfigError`, e.g. `SQS_QUEUE_URL is required`) answers 500,
 * is logged, and is retried on the next invocation.
 */
export function apiLambda(app: DurableOpsApp): ApiHandler {
  const observability = createObservability();
  return createApiHandler(lazyRuntime(app, observability), observability);
}

/**
 * The SQS-triggered worker Lambda (docs/design.md §5) running `app`'s task types: each wake-up claims the best eligible
 * operation among the registered types and runs it under its lease. Wire it with `batchSize: 1` and
 * `functionResponseType: ReportBatchItemFailures` (partial batch responses: a record whose handling threw is
 * redelivered). The runtime is built on the first invocation; until it builds, every record is reported failed.
 */
export function workerLambda(app: DurableOpsApp): WorkerLambdaHandler {
  const observability = createObservability();
  return createWorkerHandler(lazyRuntime(app, observability), observability);
}

/**
 * The scheduled sweeper Lambda (docs/design.md §6): one bounded sweep per invocation — expired leases, passed deadlines,
 * lost wake-ups, old terminal rows — returning its counts. The sweep reads no task definition; it takes the app so that
 * its runtime is built, and checked, as the API's and the worker's are. Runs may overlap safely. The runtime is built
 * on the first invocation.
 * @throws the start-up or database error of the run (the schedule simply runs it again).
 */
export function sweeperLambda(app: DurableOpsApp): SweeperLambdaHandler {
  const observability = createObservability();
  return createSweeperHandler(lazyRuntime(app, observability), observability);
}

/**
 * The migrate Lambda (docs/design.md §9): applies every pending durable-ops migration (carried by the bundle) to
 * `DATABASE_URL` — the migration user's, in AWS — and answers each migration's result. Invoke it after every deploy
 * with `durable-ops migrate --remote <function>`. It takes no application: the schema is durable-ops's own. The
 * database pool is opened on the first invocation and kept while the instance is warm; nothing is opened at import.
 */
export function migrateLambda(): MigrateLambdaHandler {
  return createMigrateHandler({
    store: lazy(() => {
      const config = loadConfig(process.env);
      return openStore(config.DATABASE_URL, { poolSize: config.DB_POOL_SIZE });
    }),
    logger: createProcessLogger(),
  });
}
