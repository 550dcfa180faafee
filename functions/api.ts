import { loadConfig } from '../lib/config.js';
import { createApiHandler } from '../lib/http/api-handler.js';
import { createObservability } from '../lib/observability/observability.js';
import { startRuntime, lazy } from '../lib/runtime.js';

/** Built once per cold start, outside the handler (Powertools tracks `cold_start` this way); it only reads `POWERTOOLS_*`. */
const observability = createObservability();

/**
 * Owner API Lambda (docs/design.md §7) behind the API Gateway HTTP API and its JWT authorizer. The runtime (config, database
 * pool, SQS client, task registry — `demo.wait` only with `DEMO_TASKS=1`) is built on the first authenticated
 * invocation, not at import. Logs are Powertools JSON lines with the Lambda context; metrics are EMF, published per
 * invocation.
 */
export const handler = createApiHandler(lazy(() => startRuntime(loadConfig(process.env), observability)), observability);
