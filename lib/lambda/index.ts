/**
 * `durable-ops/lambda`: the four Lambda handlers of an application built on durable-ops, from a registry it owns
 * (README "Use it in your application"). Each factory builds nothing but its logger and metrics when called; the
 * runtime is built from the environment on the first invocation.
 *
 * ```ts
 * // src/functions/worker.ts
 * import { workerLambda } from 'durable-ops/lambda';
 * import { app } from '../registry.js';
 * export const handler = workerLambda(app);
 * ```
 */
export {
  apiLambda,
  migrateLambda,
  sweeperLambda,
  workerLambda,
  type MigrateLambdaHandler,
  type SweeperLambdaHandler,
  type WorkerLambdaHandler,
} from './lambda-handlers.js';
export type { ApiHandler } from '../http/api-handler.js';
export type { DurableOpsApp } from '../app/durable-ops-app.js';
