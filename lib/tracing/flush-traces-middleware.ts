import type { MiddlewareObj } from '@middy/core';
import type { Tracing } from './start-tracing.js';

/**
 * A middy middleware that flushes `tracing` after every invocation, whether the handler returned or threw: Lambda
 * freezes the execution environment once the handler answers, so spans still queued then would leave late or never
 * (OpenTelemetry Lambda guidance: force-flush before returning). Attach it before the middlewares that open spans
 * (the API's `httpServerSpanMiddleware`), so its `after` runs after theirs, when every span of the invocation has
 * ended. A flush never throws and waits at most `FLUSH_DEADLINE_MS`.
 */
export function flushTracesMiddleware(tracing: Tracing): MiddlewareObj {
  const flush = async () => {
    await tracing.flush();
  };
  return { after: flush, onError: flush };
}
