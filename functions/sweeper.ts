import { loadConfig } from '../lib/config.js';
import { createObservability } from '../lib/observability/observability.js';
import { startRuntime, lazy } from '../lib/runtime.js';
import { createSweeperHandler } from '../lib/sweeper/sweeper-handler.js';

/** Built once per cold start, outside the handler (Powertools tracks `cold_start` this way); it only reads `POWERTOOLS_*`. */
const observability = createObservability();

/**
 * Scheduled sweeper Lambda (docs/design.md §6). The runtime is built on the first invocation, not at import. Logs are
 * Powertools JSON lines with the Lambda context; the run's `Sweep*` metrics are EMF, published when it ends.
 */
export const handler = createSweeperHandler(lazy(() => startRuntime(loadConfig(), observability)), observability);
