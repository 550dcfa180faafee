/**
 * `durable-ops/lambda`: the four Lambda handlers of an application built on durable-ops, from a registry it owns
 * (README "Use it in your application"), one file each, so a function's bundle carries only its own handler. Each
 * factory builds nothing but its logger and metrics when called; the runtime is built from the environment on the first
 * invocation.
 *
 * ```ts
 * // src/functions/worker.ts
 * import { workerLambda } from 'durable-ops/lambda';
 * import { app } from '../registry.js';
 * export const handler = workerLambda(app);
 * ```
 */
export { apiLambda } from './api-lambda.js';
export { workerLambda, type WorkerLambdaHandler } from './worker-lambda.js';
export { sweeperLambda, type SweeperLambdaHandler } from './sweeper-lambda.js';
export { migrateLambda, type MigrateLambdaHandler } from './migrate-lambda.js';
export type { ApiHandler } from '../http/api-handler.js';
export type { DurableOpsApp } from '../app/durable-ops-app.js';
