import { loadConfig } from '../lib/config.js';
import { createRuntime, lazy } from '../lib/runtime.js';
import { createSweeperHandler } from '../lib/sweeper/sweeper-handler.js';

/** Scheduled sweeper Lambda (DESIGN §6). The runtime is built on the first invocation, not at import. */
export const handler = createSweeperHandler(lazy(() => createRuntime(loadConfig())));
