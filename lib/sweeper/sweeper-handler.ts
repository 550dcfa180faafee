import middy from '@middy/core';
import { DatabaseUnavailableError } from '../errors.js';
import type { Observability } from '../observability/observability.js';
import type { Runtime } from '../runtime.js';
import { runSweepOnce, type SweepCounts } from './run-sweep-once.js';

/**
 * The scheduled sweeper Lambda (docs/design.md §6; EventBridge schedule): one bounded `runSweepOnce`, logged and returned
 * as counts. Batch size and time budget come from `SWEEP_BATCH_SIZE` and `SWEEP_TIME_BUDGET_SECONDS`; keep the
 * budget below the function timeout. Overlapping runs are safe.
 * @param runtime the runtime, or a function resolving it on first invocation (Lambda cold start).
 * @param observability when given, its middlewares come first: Lambda context on every log line, the run's `Sweep*`
 * metrics published when it ends. @default none (tests)
 */
export function createSweeperHandler(runtime: Runtime | (() => Promise<Runtime>), observability?: Observability) {
  const resolve = typeof runtime === 'function' ? runtime : async () => runtime;
  return middy<unknown, SweepCounts>()
    .use([...(observability?.middlewares ?? [])])
    .handler(async () => sweepWith(await resolve()));
}

/**
 * One sweeper run with the runtime's configuration, logging and counting through the runtime's logger and metrics:
 * what the Lambda, the local stack's timer and `npm run sweep` all call. A database outage
 * (`DatabaseUnavailableError`) is logged at `warn` with its code before it is rethrown.
 * @throws the first database error of the run (see `runSweepOnce`).
 */
export async function sweepWith(r: Runtime): Promise<SweepCounts> {
  try {
    return await sweepOnceWith(r);
  } catch (error) {
    // An outage is not a bug: one WARN with the driver's code, no stack. The run still fails, as before.
    if (error instanceof DatabaseUnavailableError) {
      r.logger.warn('sweep stopped: the database is unavailable; the next run resumes', { code: error.code, reason: error.reason });
    }
    throw error;
  }
}

function sweepOnceWith(r: Runtime): Promise<SweepCounts> {
  return runSweepOnce({
    store: r.store,
    policy: r.policy,
    wakeups: r.wakeups,
    logger: r.logger,
    metrics: r.metrics,
    batchSize: r.config.SWEEP_BATCH_SIZE,
    timeBudgetMs: r.config.SWEEP_TIME_BUDGET_SECONDS * 1000,
  });
}
