import { loadConfig } from '../lib/config.js';
import { createObservability } from '../lib/observability/observability.js';
import { startRuntime, lazy } from '../lib/runtime.js';
import { createWorkerHandler } from '../lib/worker/worker-handler.js';

/** Built once per cold start, outside the handler (Powertools tracks `cold_start` this way); it only reads `POWERTOOLS_*`. */
const observability = createObservability();

/**
 * SQS-triggered worker Lambda (docs/design.md §5). The runtime is built on the first invocation, not at import. Logs are
 * Powertools JSON lines with the Lambda context; metrics are EMF, published per invocation (one batch).
 */
export const handler = createWorkerHandler(lazy(() => startRuntime(loadConfig(), observability)), observability);
