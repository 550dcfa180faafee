/**
 * Tracing set-up, once per process. Why OpenTelemetry rather than the Powertools Tracer / X-Ray SDK (docs/design.md §9
 * "Observability"): (1) the worker claims the best eligible operation, and an SQS-triggered Lambda's X-Ray segment
 * belongs to the invocation's own trace, so X-Ray cannot parent a worker's run on the admission that woke it — the W3C
 * Trace Context carried in each wake-up's SQS message attribute can, per record; (2) the same spans go to a local
 * JSON-lines file a developer can read; (3) it is vendor-neutral: in AWS spans go by OTLP/HTTP to a collector (a
 * collector Lambda layer such as ADOT's, which forwards to X-Ray, or any OTLP backend).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TracerProvider,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { FileSpanExporter } from './file-span-exporter.js';
import type { TracingSettings } from './tracing-settings.js';

/** Most time, in **ms**, one OTLP export may take before the exporter abandons it (in the background, between invocations). */
export const OTLP_EXPORT_TIMEOUT_MS = 5_000;

/**
 * Most time, in **ms**, the flush at the end of an invocation waits for the exporters: it runs before the answer is
 * returned, so an unreachable or slow collector adds at most this much to every invocation (and the spans not yet sent
 * then are sent with a later flush, or lost) — never the exporter's own retry time.
 */
export const FLUSH_DEADLINE_MS = 300;

/** The tracing of one process: whether spans are recorded, and how to push them out. */
export interface Tracing {
  /** False when nothing is exported: the OpenTelemetry API then stays the no-op tracer and spans cost almost nothing. */
  readonly enabled: boolean;
  /**
   * Exports every finished span now and resolves when the exporters are done, or after {@link FLUSH_DEADLINE_MS} at the
   * latest. Called at the end of every Lambda invocation (`flushTracesMiddleware`): a frozen execution environment sends
   * nothing. Never rejects.
   */
  flush(): Promise<void>;
  /** Flushes, then stops the processors; spans ended later are dropped. Never rejects. */
  shutdown(): Promise<void>;
}

const DISABLED: Tracing = Object.freeze({ enabled: false, flush: async () => undefined, shutdown: async () => undefined });

let started: Tracing | undefined;

/**
 * Every trace is recorded, whatever a caller's `traceparent` says: a remote parent flagged not-sampled (`-00`) is
 * ignored for sampling, so no client can switch off the tracing of its operations (it still chooses the trace id it
 * joins — W3C Trace Context has no authentication; treat a trace id from outside as a correlation hint only).
 */
const RECORD_EVERY_REQUEST = new ParentBasedSampler({ root: new AlwaysOnSampler(), remoteParentNotSampled: new AlwaysOnSampler() });

function processorsOf(settings: TracingSettings): SpanProcessor[] {
  const processors: SpanProcessor[] = [];
  if (settings.exporter === 'otlp') {
    const exporter = new OTLPTraceExporter({ ...(settings.otlpUrl ? { url: settings.otlpUrl } : {}), timeoutMillis: OTLP_EXPORT_TIMEOUT_MS });
    processors.push(new BatchSpanProcessor({ exporter, exportTimeoutMillis: OTLP_EXPORT_TIMEOUT_MS }));
  }
  if (settings.exporter === 'console') processors.push(new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() }));
  if (settings.traceFile) processors.push(new SimpleSpanProcessor({ exporter: new FileSpanExporter(settings.traceFile) }));
  return processors;
}

/**
 * Starts tracing for this process from `settings` (`tracingSettingsFromEnv`), once: the first call registers, as the
 * OpenTelemetry API's globals, a `TracerProvider` whose resource has `service.name`, an `AsyncLocalStorageContextManager`
 * (a span started inside another's callback is its child, across `await`s) and the W3C Trace Context propagator
 * (`traceparent` / `tracestate`, W3C Trace Context Level 1); later calls return the same {@link Tracing} and ignore
 * their settings. With exporter `none` and no trace file it registers nothing: `trace.getTracer` stays the API's
 * no-op tracer.
 *
 * Every trace is recorded ({@link RECORD_EVERY_REQUEST}). OTLP spans are batched (`BatchSpanProcessor`) and sent by
 * {@link Tracing.flush}; console and file spans are written
 * as each ends (`SimpleSpanProcessor`). Why OpenTelemetry and not the X-Ray SDK: docs/design.md §9 "Observability".
 */
export function startTracing(settings: TracingSettings): Tracing {
  if (started) return started;
  const spanProcessors = processorsOf(settings);
  if (spanProcessors.length === 0) return (started = DISABLED);
  const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': settings.serviceName }), sampler: RECORD_EVERY_REQUEST, spanProcessors });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const settle = (work: Promise<void>) => work.catch(() => undefined);
  const flush = (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FLUSH_DEADLINE_MS);
      timer.unref();
    });
    return Promise.race([settle(provider.forceFlush()), deadline]).finally(() => clearTimeout(timer));
  };
  started = Object.freeze({ enabled: true, flush, shutdown: () => settle(provider.shutdown()) });
  return started;
}
