import type { DurableOpsApp } from '../app/durable-ops-app.js';
import { createObservability } from '../observability/observability.js';
import { createSweeperHandler } from '../sweeper/sweeper-handler.js';
import { lazyRuntime } from './lambda-runtime.js';

/** The scheduled sweeper Lambda's handler (`(event, context) => Promise<SweepCounts>`, middy). */
export type SweeperLambdaHandler = ReturnType<typeof createSweeperHandler>;

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
