import { loadConfig } from '../lib/config.js';
import { createApiHandler } from '../lib/http/api-handler.js';
import { createRuntime, lazy } from '../lib/runtime.js';

/**
 * Owner API Lambda (DESIGN §7) behind the API Gateway HTTP API and its JWT authorizer. The runtime (config, database
 * pool, SQS client, task registry — `demo.wait` only with `DEMO_TASKS=1`) is built on the first authenticated
 * invocation, not at import.
 */
export const handler = createApiHandler(lazy(() => createRuntime(loadConfig(process.env))));
