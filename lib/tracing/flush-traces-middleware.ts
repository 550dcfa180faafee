import type { MiddlewareObj } from '@middy/core';
import type { Tracing } from './start-tracing.js';

/**
 * A middy middleware that flushes `tracing` after every invocation, whether the handler returned or threw: Lambda
 * freezes the execution environment once the handler answers, so spans still queued then would leave late or never
 * (OpenTelemetry Lambda guidance: force-flush before returning). Attach it first (outermost), so its `after` runs
 * last, when every span of the invocation — the API's request span included — has ended. A flush never throws.
 */
export function flushTracesMiddleware(tracing: Tracing): MiddlewareObj {
  const flush = async () => {
    await tracing.flush();
  };
  return { after: flush, onError: flush };
}
