import middy from '@middy/core';
import type { Runtime } from '../runtime.js';
import { runSweepOnce, type SweepCounts } from './run-sweep-once.js';

/**
 * The scheduled sweeper Lambda (DESIGN §6; EventBridge schedule): one bounded `runSweepOnce`, logged and returned
 * as counts. Batch size and time budget come from `SWEEP_BATCH_SIZE` and `SWEEP_TIME_BUDGET_SECONDS`; keep the
 * budget below the function timeout. Overlapping runs are safe.
 * @param runtime the runtime, or a function resolving it on first invocation (Lambda cold start).
 */
export function createSweeperHandler(runtime: Runtime | (() => Promise<Runtime>)) {
  const resolve = typeof runtime === 'function' ? runtime : async () => runtime;
  return middy<unknown, SweepCounts>().handler(async () => sweepWith(await resolve()));
}

/**
 * One sweeper run with the runtime's configuration, logged: what the Lambda, the local stack's timer and
 * `npm run sweep` all call.
 */
export async function sweepWith(r: Runtime): Promise<SweepCounts> {
  const counts = await runSweepOnce({
    store: r.store,
    policy: r.policy,
    wakeups: r.wakeups,
    logger: r.logger,
    batchSize: r.config.SWEEP_BATCH_SIZE,
    timeBudgetMs: r.config.SWEEP_TIME_BUDGET_SECONDS * 1000,
  });
  r.logger.info('sweep finished', { ...counts });
  return counts;
}
