import { describeError, type Logger } from '../logger.js';
import { startTracing, type Tracing } from './start-tracing.js';
import { DEFAULT_SERVICE_NAME, tracingSettingsFromEnv } from './tracing-settings.js';

/**
 * {@link startTracing} with the settings of `env` (`tracingSettingsFromEnv`: `OTEL_TRACES_EXPORTER`,
 * `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`, `DURABLE_OPS_TRACE_FILE`, `OTEL_SERVICE_NAME` / `POWERTOOLS_SERVICE_NAME`).
 * Tracing fails open: invalid tracing variables are logged at `error` level and tracing stays off, so a typo in an
 * observability setting never stops a function from serving. Never throws.
 */
export function startTracingFromEnv(env: Readonly<Record<string, string | undefined>>, logger: Logger): Tracing {
  try {
    return startTracing(tracingSettingsFromEnv(env));
  } catch (error) {
    logger.error('tracing settings are invalid; tracing is off', describeError(error));
    return startTracing({ exporter: 'none', serviceName: DEFAULT_SERVICE_NAME });
  }
}
