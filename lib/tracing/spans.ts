import { SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

/**
 * The span attributes durable-ops sets — with the sweep's counts (`durable_ops.sweep.<count>`, run-sweep-once.ts) and
 * `error.type` ({@link recordSpanError}) the only others: identifiers, bounded codes and counts, never a lease token, an
 * idempotency key, a request hash, params, a subject or owner id, a prompt, a model's output or a failure message
 * (they may carry user content; docs/design.md §9 "Observability"). Names follow the OpenTelemetry semantic conventions
 * where one exists (`http.*`, `messaging.*`), else the `durable_ops.` namespace.
 */
export const SpanAttr = Object.freeze({
  operationId: 'durable_ops.operation.id',
  taskType: 'durable_ops.task_type',
  attempt: 'durable_ops.attempt',
  outcome: 'durable_ops.outcome',
  /** Why a wake-up was sent (`admitted`, `retry`, `sweeper`, …: `WakeupMessageSchema`'s `reason`). */
  wakeupReason: 'durable_ops.wakeup.reason',
  /** The operation a wake-up names: a hint only, the worker may claim another (README "Tracing"). */
  wakeupOperationId: 'durable_ops.wakeup.operation.id',
  /** `local` or `external`. */
  modelRoute: 'durable_ops.model.route',
  messagingSystem: 'messaging.system',
  messagingOperationType: 'messaging.operation.type',
  messagingBatchCount: 'messaging.batch.message_count',
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpStatusCode: 'http.response.status_code',
});

/**
 * The tracer every durable-ops span comes from. A proxy: until `startTracing` registers a provider (and forever when
 * tracing is off) it is the OpenTelemetry API's no-op tracer.
 */
export const tracer = trace.getTracer('durable-ops');

/**
 * Marks `span` failed by `error`: status `ERROR` with the error's **class name** as the status message
 * (e.g. `LeaseLostError`), and nothing else — an error's message can quote user content, so it is never recorded.
 */
export function recordSpanError(span: Span, error: unknown): void {
  const name = error instanceof Error ? error.constructor.name || error.name : typeof error;
  span.setStatus({ code: SpanStatusCode.ERROR, message: name });
  span.setAttribute('error.type', name);
}

/** Options of {@link inSpan}. */
export interface InSpanOptions {
  /** @default `SpanKind.INTERNAL` */
  readonly kind?: SpanKind;
  /** Attributes known at the start; set more through the span. Only {@link SpanAttr} names. */
  readonly attributes?: Attributes;
  /** The parent, when it is not the active span (e.g. a context extracted from a message). @default the active context */
  readonly parent?: Context;
}

/**
 * Runs `work` inside a new active span called `name`, so spans started within it (across `await`s) are its children,
 * and ends the span when `work` settles. A rejection is recorded with {@link recordSpanError} and rethrown unchanged.
 */
export async function inSpan<T>(name: string, options: InSpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const spanOptions = { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) };
  const run = async (span: Span): Promise<T> => {
    try {
      return await work(span);
    } catch (error) {
      recordSpanError(span, error);
      throw error;
    } finally {
      span.end();
    }
  };
  return options.parent ? tracer.startActiveSpan(name, spanOptions, options.parent, run) : tracer.startActiveSpan(name, spanOptions, run);
}
