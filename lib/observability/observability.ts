import type { MiddlewareObj } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { createPowertoolsLogger, describeError, loggerOver, type Logger } from '../logger.js';
import type { PublishingMetrics } from './metrics.js';
import { createPowertoolsMetrics, PowertoolsMetrics } from './powertools-metrics.js';

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
   * `function_request_id`, `function_name`, `cold_start`, …; keys appended during it are reset after it) and
   * {@link publishMetricsMiddleware} (the invocation's metrics written when it ends, returned or thrown).
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
 * The production {@link Observability}: a Powertools `Logger` (service `durable-ops`, JSON lines, level from
 * `POWERTOOLS_LOG_LEVEL`, default `INFO`) behind our `Logger`, and `PowertoolsMetrics` (namespace `DurableOps`, EMF on
 * stdout, published once per invocation). Reads `POWERTOOLS_*` variables when called, never at import.
 * Sources: Powertools for AWS Lambda (TypeScript) v2 — Logger "Middy.js middleware", Metrics "Flushing metrics".
 */
export function createObservability(): Observability {
  const powertools = createPowertoolsLogger();
  const logger = loggerOver(powertools);
  const metrics = new PowertoolsMetrics(createPowertoolsMetrics(powertools));
  return Object.freeze({
    logger,
    metrics,
    middlewares: Object.freeze([injectLambdaContext(powertools, { resetKeys: true }), publishMetricsMiddleware(metrics, logger)]),
  });
}
