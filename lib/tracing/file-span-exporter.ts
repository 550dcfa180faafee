import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ExportResultCode, hrTimeToMilliseconds, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';

/**
 * One line of the trace file: a finished span. `parentSpanId` is absent on a root span (or one whose parent came from
 * another process through `traceparent`: then it names that process's span). Times are Unix epoch **ms** (fractional).
 */
export interface TraceFileLine {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  /** `SERVER`, `CLIENT`, `PRODUCER`, `CONSUMER` or `INTERNAL`. */
  readonly kind: string;
  readonly startMs: number;
  readonly endMs: number;
  /** `UNSET`, `OK` or `ERROR`; `message` is an error class name (see `recordSpanError`). */
  readonly status: { readonly code: string; readonly message?: string };
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** The {@link TraceFileLine} of a finished span. */
export function traceFileLine(span: ReadableSpan): TraceFileLine {
  const context = span.spanContext();
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: SpanKind[span.kind],
    startMs: hrTimeToMilliseconds(span.startTime),
    endMs: hrTimeToMilliseconds(span.endTime),
    status: { code: SpanStatusCode[span.status.code], ...(span.status.message ? { message: span.status.message } : {}) },
    attributes: span.attributes,
  };
}

/**
 * A `SpanExporter` that appends each finished span to `path` as one JSON line ({@link TraceFileLine}), creating the
 * directory when needed: the trace a developer reads locally (`DURABLE_OPS_TRACE_FILE`, README "Tracing"). Writes are
 * serialised, so lines never interleave; `forceFlush` resolves when every write so far has landed. A failed write
 * fails that export (the span processor reports it through the OpenTelemetry diagnostic logger) and never the caller.
 */
export class FileSpanExporter implements SpanExporter {
  readonly #path: string;
  #writes: Promise<unknown> = Promise.resolve();
  /** Set once the directory exists: it is created by the first write, not checked again by every export. */
  #directoryReady = false;

  constructor(path: string) {
    this.#path = path;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    const text = spans.map((span) => `${JSON.stringify(traceFileLine(span))}\n`).join('');
    this.#writes = this.#writes
      .then(async () => {
        if (!this.#directoryReady) await mkdir(dirname(this.#path), { recursive: true });
        this.#directoryReady = true;
        await appendFile(this.#path, text, 'utf8');
      })
      .then(
        () => resultCallback({ code: ExportResultCode.SUCCESS }),
        (error: unknown) => resultCallback({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
      );
  }

  async forceFlush(): Promise<void> {
    await this.#writes;
  }

  async shutdown(): Promise<void> {
    await this.#writes;
  }
}
