/**
 * `durable-ops/local`: the whole stack in one process — HTTP API, in-process SQS queue, worker, sweeper, migrations —
 * for an application's own task types (README "Use it in your application"). Needs the optional peer dependency
 * `fauxqs` (the queue), and `better-sqlite3` for a SQLite `DATABASE_URL`.
 *
 * ```ts
 * import { signDevToken, startLocalApp } from 'durable-ops/local';
 * import { app } from './registry.js';
 * const stack = await startLocalApp(app);
 * ```
 */
export { startLocalApp, type LocalAppOptions } from './local-app.js';
export { startLocalStack, type LocalStack, type LocalStackOptions } from './local-stack.js';
export { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken, verifyDevToken, type SignDevTokenOptions } from './dev-token.js';
export { DEV_OPERATOR_GROUP, DEV_OPERATOR_GROUP_CLAIM, withLocalOperatorRule } from './dev-operator.js';
export type { DurableOpsApp } from '../app/durable-ops-app.js';
