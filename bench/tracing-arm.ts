/**
 * One arm of the tracing-cost phase (`bench/tracing-cost.ts`), in a process of its own: OpenTelemetry registers its
 * globals once per process (`startTracing`), so tracing on and off cannot share one. Run as
 * `node --import tsx bench/tracing-arm.ts '<TracingArmInput JSON>'`; prints one {@link TracingArmResult} JSON line on
 * stdout, last. Tracing comes from the environment as in a deployed function (`tracingSettingsFromEnv`), except in
 * the `sdk` arm, which registers the SDK with an exporter that only counts spans.
 */
import { readFile, stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { SimpleSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import { startTracing, tracingSettingsFromEnv, type TraceFileLine, type Tracing } from '../lib/index.js';
import { benchCapacity } from './durable-ops-deps.js';
import { HandlerPathRig } from './handler-path-rig.js';
import { summarize, type LatencySummary } from './stats.js';

/**
 * How an arm traces: `off` — no tracing variable (the OpenTelemetry API's no-op tracer); `file` —
 * `DURABLE_OPS_TRACE_FILE` set (the SDK, `SimpleSpanProcessor`, `FileSpanExporter`); `sdk` — the same SDK registration
 * with an exporter that writes nothing, to tell the SDK's cost from the file's.
 */
export type TracingArm = 'off' | 'file' | 'sdk';

/** What the parent hands an arm (argv[2], JSON). */
export interface TracingArmInput {
  readonly arm: TracingArm;
  /** An empty benchmark database of this arm's own. */
  readonly databaseUrl: string;
  readonly ops: number;
  readonly owners: number;
  readonly admitters: number;
  readonly workers: number;
  readonly sqsBatchSize: number;
  readonly timeoutMs: number;
}

/** What an arm measured. */
export interface TracingArmResult {
  readonly arm: TracingArm;
  readonly ops: number;
  /** First admission started → last `operation_succeeded`, in s. */
  readonly seconds: number;
  readonly opsPerSec: number;
  /** Every `POST /api/operations` call (its 429 retries included), in ms. */
  readonly admission: LatencySummary;
  /** This process's CPU (user + system) over the timed window, per operation, in ms: API, workers, tracing, drivers. */
  readonly cpuMsPerOp: number;
  /** Finished spans by name (`file`: read back from the trace file; `sdk`: counted by its exporter; `off`: none). */
  readonly spans: Readonly<Record<string, number>>;
  /** `wakeup process` spans whose parent is a `wakeup publish` span of the same run (the trace crossed the queue). */
  readonly linkedConsumerSpans: number;
  /** Size of the trace file afterwards, in bytes (0 without one). */
  readonly traceFileBytes: number;
  readonly wakeupsSent: number;
  readonly capacityRejections: number;
  /** Everything wrong with the run (empty when it is clean). */
  readonly problems: readonly string[];
}

/** A `SpanExporter` that keeps only the names and ids of the spans it is given (what the span check needs). */
class CountingSpanExporter implements SpanExporter {
  readonly lines: Pick<TraceFileLine, 'name' | 'spanId' | 'parentSpanId'>[] = [];
  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    for (const span of spans) this.lines.push({ name: span.name, spanId: span.spanContext().spanId, ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}) });
    resultCallback({ code: ExportResultCode.SUCCESS });
  }
  async shutdown(): Promise<void> {}
}

/** The `sdk` arm's tracing: `startTracing`'s registration (provider, context manager, propagator) around `exporter`. */
function startCountingTracing(exporter: CountingSpanExporter): Tracing {
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return { enabled: true, flush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}

async function traceFileLines(path: string | undefined): Promise<{ lines: TraceFileLine[]; bytes: number }> {
  if (!path) return { lines: [], bytes: 0 };
  const text = await readFile(path, 'utf8').catch(() => '');
  return { lines: text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as TraceFileLine), bytes: (await stat(path).catch(() => ({ size: 0 }))).size };
}

async function runArm(input: TracingArmInput): Promise<TracingArmResult> {
  const counting = new CountingSpanExporter();
  const tracing = input.arm === 'sdk' ? startCountingTracing(counting) : startTracing(tracingSettingsFromEnv(process.env));
  const problems: string[] = [];
  if (tracing.enabled !== (input.arm !== 'off')) problems.push(`tracing is ${tracing.enabled ? 'on' : 'off'} in arm ${input.arm}`);
  const rig = await HandlerPathRig.open({ ...input, capacity: benchCapacity(input.ops, input.owners, input.workers), tracing });
  const admissionMs: number[] = [];
  let target = input.ops;
  let admissionDone = false;
  let next = 0;
  try {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const admitter = async () => {
      for (let i = next++; i < input.ops; i = next++) {
        const t0 = performance.now();
        await rig.admit(i);
        admissionMs.push(performance.now() - t0);
      }
    };
    const workersDone = rig.work(() => target, () => admissionDone, started + input.timeoutMs);
    const admission = await Promise.allSettled(Array.from({ length: input.admitters }, admitter));
    const failed = admission.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      problems.push(`admission failed: ${String(failed.reason)}`);
      target = admissionMs.length;
    }
    admissionDone = true;
    await workersDone;
    const cpu = process.cpuUsage(cpuBefore);
    const seconds = ((rig.lastSucceededAt || performance.now()) - started) / 1000;
    await tracing.flush();

    const file = await traceFileLines(process.env.DURABLE_OPS_TRACE_FILE);
    const lines = input.arm === 'sdk' ? counting.lines : file.lines;
    const spans: Record<string, number> = {};
    for (const line of lines) spans[line.name] = (spans[line.name] ?? 0) + 1;
    const publishIds = new Set(lines.filter((l) => l.name === 'wakeup publish').map((l) => l.spanId));
    const linkedConsumerSpans = lines.filter((l) => l.name === 'wakeup process' && l.parentSpanId !== undefined && publishIds.has(l.parentSpanId)).length;

    const rows = await rig.succeededRows();
    if (rows !== input.ops) problems.push(`${rows} succeeded rows, expected ${input.ops}`);
    const doubled = rig.executions.duplicated().length;
    if (doubled > 0) problems.push(`${doubled} operations executed more than once`);
    if (rig.warnings.length > 0) problems.push(`${rig.warnings.length} warnings logged, first: ${rig.warnings[0]}`);
    if (rig.errors.length > 0) problems.push(`${rig.errors.length} errors retried, first: ${rig.errors[0]}`);
    return {
      arm: input.arm,
      ops: input.ops,
      seconds,
      opsPerSec: rig.succeeded / seconds,
      admission: summarize(admissionMs),
      cpuMsPerOp: (cpu.user + cpu.system) / 1000 / input.ops,
      spans,
      linkedConsumerSpans,
      traceFileBytes: file.bytes,
      wakeupsSent: rig.sqs.sent,
      capacityRejections: rig.capacityRejections,
      problems,
    };
  } finally {
    await rig.close();
    await tracing.shutdown();
  }
}

runArm(JSON.parse(process.argv[2] ?? '{}') as TracingArmInput).then(
  (result) => {
    console.log(JSON.stringify(result));
    process.exit(0);
  },
  (error: unknown) => {
    console.error('[bench tracing arm] failed:', error);
    process.exit(1);
  },
);
