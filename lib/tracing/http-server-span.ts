import type { MiddlewareObj, Request } from '@middy/core';
import { context, propagation, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';
import type { ApiEvent, ApiResult } from '../http/route-types.js';
import { recordSpanError, SpanAttr, tracer } from './spans.js';

/** The open SERVER span of each request in flight, by its event (one event object per invocation). */
const REQUEST_SPANS = new WeakMap<ApiEvent, Span>();

function endRequestSpan(request: Request<ApiEvent, ApiResult>): void {
  const span = REQUEST_SPANS.get(request.event);
  if (!span) return;
  REQUEST_SPANS.delete(request.event);
  const status = request.response?.statusCode;
  if (status !== undefined) span.setAttribute(SpanAttr.httpStatusCode, status);
  // OpenTelemetry HTTP semantic conventions: on a SERVER span only a 5xx (or no answer at all) is an error.
  if (status === undefined || status >= 500) recordSpanError(span, request.error ?? new Error('no response'));
  span.end();
}

/**
 * The middy middleware that gives every API request a SERVER span: started before the other middlewares run (named
 * after the method until a route matches, see {@link inRequestSpan}), ended after the problem-details middleware has
 * answered, with `http.request.method`, `http.route` and `http.response.status_code` (OpenTelemetry HTTP semantic
 * conventions). Its parent is the caller's W3C `traceparent` header when the request carries a valid one, so a client's
 * trace continues; else it starts a trace. The API is an API Gateway HTTP API, which X-Ray does not trace, so this span
 * is where a trace of an operation starts (docs/design.md §9 "Observability"). Attach it before `problemDetailsMiddleware`.
 */
export function httpServerSpanMiddleware(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    before: (request) => {
      const method = request.event.requestContext?.http?.method ?? 'UNKNOWN';
      const parent = propagation.extract(ROOT_CONTEXT, request.event.headers ?? {});
      REQUEST_SPANS.set(request.event, tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { [SpanAttr.httpMethod]: method } }, parent));
    },
    after: endRequestSpan,
    onError: endRequestSpan,
  };
}

/**
 * Runs a matched route's `work` with the request's SERVER span active — so the spans it starts (`admission`, a
 * wake-up's `wakeup publish`) are its children — after naming the span `<METHOD> <route template>`, e.g.
 * `POST /api/operations`, and setting `http.route`. Without {@link httpServerSpanMiddleware} it just runs `work`.
 */
export function inRequestSpan<T>(event: ApiEvent, route: { readonly method: string; readonly path: string }, work: () => Promise<T>): Promise<T> {
  const span = REQUEST_SPANS.get(event);
  if (!span) return work();
  span.updateName(`${route.method} ${route.path}`);
  span.setAttribute(SpanAttr.httpRoute, route.path);
  return context.with(trace.setSpan(context.active(), span), work);
}
