import { loadConfig } from '../lib/config.js';
import { createRuntime, lazy } from '../lib/runtime.js';
import { createWorkerHandler } from '../lib/worker/worker-handler.js';

/** SQS-triggered worker Lambda (DESIGN §5). The runtime is built on the first invocation, not at import. */
export const handler = createWorkerHandler(lazy(() => createRuntime(loadConfig())));
