import { appOverrides, type DurableOpsApp } from '../app/durable-ops-app.js';
import { loadConfig } from '../config.js';
import type { Observability } from '../observability/observability.js';
import { lazy, startRuntime, type Runtime } from '../runtime.js';

/**
 * The runtime of `app`, built once, on the first call: the configuration read from `process.env` then (`loadConfig`),
 * the app's registry and recovery modules, the observability's logger and metrics, and `startRuntime`'s checks. A
 * failed build is retried on the next call (`lazy`).
 */
export function lazyRuntime(app: DurableOpsApp, observability: Observability): () => Promise<Runtime> {
  return lazy(() => {
    const config = loadConfig(process.env);
    return startRuntime(config, { logger: observability.logger, metrics: observability.metrics, ...appOverrides(app, config) });
  });
}
