import type { MiddlewareObj } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { createPowertoolsLogger, describeError, loggerOver, type Logger } from '../logger.js';
import type { PublishingMetrics } from './metrics.js';
import { createPowertoolsMetrics, PowertoolsMetrics } from './powertools-metrics.js';
import { flushTracesMiddleware } from '../tracing/flush-traces-middleware.js';
import type { Tracing } from '../tracing/start-tracing.js';
import { startTracingFromEnv } from '../tracing/tracing-from-env.js';
import { redactEvent } from './redact-event.js';

/**
 * The logger and metrics of one process, with the middy middlewares that tie them to each invocation. Built once per
 * process (per Lambda cold start) by the entry points — `functions/*.ts` and the local stack — and handed both to the
 * runtime (`createRuntime(config, observability)`) and to the handler factories, whose middlewares must exist before
 * the runtime is built lazily on the first invocation.
 */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: PublishingMetrics;
  /**
   * Middy middlewares to attach first: Powertools `injectLambdaContext` (every line of the invocation carries
   * `function_request_id`, `function_name`, `cold_start`, …; keys appended during it are reset after it; the debug
   * sampling decision is re-made per invocation; it never logs the raw event), with `POWERTOOLS_LOGGER_LOG_EVENT=true`
   * {@link logRedactedEventMiddleware}, {@link publishMetricsMiddleware} (the invocation's metrics written when it
   * ends, returned or thrown) and `flushTracesMiddleware` (its spans exported before it ends).
   */
  readonly middlewares: readonly MiddlewareObj[];
}

/**
 * Publishes `metrics` after every invocation, whether the handler returned or threw (Powertools' `logMetrics` does the
 * same for its own `Metrics`; ours are summed per task type first, see `PowertoolsMetrics`). A failed publish is logged
 * and never fails the invocation: losing a data point must not make SQS redeliver a batch or an API answer 500.
 */
export function publishMetricsMiddleware(metrics: PublishingMetrics, logger: Logger): MiddlewareObj {
  const publish = () => {
    try {
      metrics.publish();
    } catch (error) {
      logger.error('metrics publish failed; this invocation\'s counts are lost', describeError(error));
    }
  };
  return { after: publish, onError: publish };
}

/**
 * Logs the invocation's event once, before the handler, as Powertools' own event line does (`message: "Lambda
 * invocation event"`, the event under `event`) but redacted first ({@link redactEvent}): no authorization header,
 * cookie, idempotency key, body, query string, JWT claim or SQS message body reaches the log.
 */
export function logRedactedEventMiddleware(logger: Logger): MiddlewareObj {
  return { before: (request) => logger.info('Lambda invocation event', { event: redactEvent(request.event) }) };
}

/**
 * The production {@link Observability}: a Powertools `Logger` behind our `Logger` (`createPowertoolsLogger`: service
 * `POWERTOOLS_SERVICE_NAME`, default `durable-ops`; JSON lines; level from `POWERTOOLS_LOG_LEVEL`, default `INFO`;
 * debug sampling by `POWERTOOLS_LOGGER_SAMPLE_RATE`), and `PowertoolsMetrics` (namespace `POWERTOOLS_METRICS_NAMESPACE`,
 * default `DurableOps`; EMF on stdout, published once per invocation). Reads the `POWERTOOLS_*` variables when called,
 * never at import. `injectLambdaContext` gets `logEvent: false`, so Powertools never prints a raw event whatever
 * `POWERTOOLS_LOGGER_LOG_EVENT` says; when that variable is `true` (Powertools' own parsing, `getLogEvent()`) the event
 * is logged redacted instead ({@link logRedactedEventMiddleware}).
 * Sources: Powertools for AWS Lambda (TypeScript) v2 — Logger "Middy.js middleware", "Log incoming event", Metrics
 * "Flushing metrics".
 *
 * Tracing (OpenTelemetry, README "Tracing"): `tracing`, or by default the process's tracing started from the `OTEL_*`
 * and `DURABLE_OPS_TRACE_FILE` variables (`startTracingFromEnv`), whose spans {@link flushTracesMiddleware} flushes at
 * the end of every invocation.
 */
export function createObservability(tracing?: Tracing): Observability {
  const powertools = createPowertoolsLogger();
  const logger = loggerOver(powertools);
  const traces = tracing ?? startTracingFromEnv(process.env, logger);
  const metrics = new PowertoolsMetrics(createPowertoolsMetrics(powertools));
  return Object.freeze({
    logger,
    metrics,
    middlewares: Object.freeze([
      injectLambdaContext(powertools, { resetKeys: true, logEvent: false }),
      ...(powertools.getLogEvent() ? [logRedactedEventMiddleware(logger)] : []),
      publishMetricsMiddleware(metrics, logger),
      flushTracesMiddleware(traces),
    ]),
  });
}
