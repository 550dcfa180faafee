import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { startLocalStack, type LocalStack } from '../../lib/local/local-stack.js';
import { silentLogger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import type { Observability } from '../../lib/observability/observability.js';
import type { TraceFileLine } from '../../lib/tracing/file-span-exporter.js';
import { flushTracesMiddleware } from '../../lib/tracing/flush-traces-middleware.js';
import { startTracing } from '../../lib/tracing/start-tracing.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { attributeValues, onlySpan, readTraceFile } from '../support/trace-file.js';
import { waitFor } from '../support/wait-for.js';

/**
 * One operation's trace through the real local pipeline — the API handler behind the local HTTP server, the wake-up
 * through fauxqs and the SQS poller, the worker handler — read back from the JSON-lines trace file
 * (`DURABLE_OPS_TRACE_FILE`'s exporter), as a developer reads it.
 */

const SECRET = 'operation-trace-test-secret-of-32-chars';
const dir = mkdtempSync(join(tmpdir(), 'durable-ops-trace-'));
const traceFile = join(dir, 'traces.jsonl');
// Once per test file (one process): the same global set-up `npm start` makes, with the file exporter only.
const tracing = startTracing({ exporter: 'none', traceFile, serviceName: 'durable-ops-test' });
const traced: Observability = Object.freeze({ logger: silentLogger, metrics: noopMetrics, middlewares: [flushTracesMiddleware(tracing)] });

afterAll(async () => {
  await tracing.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe.each(DIALECTS)('an operation traced through the local stack on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let stack: LocalStack;
  let token: string;
  const sub = `trace-owner-${dialect}-${hex(4)}`;
  /** Everything that must never reach a span attribute (checked by the last test). */
  const secrets: string[] = [sub];

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect, { migrate: false });
    const config = loadConfig({ DATABASE_URL: t.url, PORT: '0', DEMO_TASKS: '1', AI_TASKS: '1', DEV_JWT_SECRET: SECRET, SWEEP_INTERVAL_SECONDS: '60' });
    stack = await startLocalStack(config, traced);
    token = await signDevToken(sub, SECRET);
  });

  afterAll(async () => {
    await stack?.stop();
    await t?.drop();
  });

  const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra });

  async function post(path: string, body: unknown, extra: Record<string, string> = {}): Promise<{ id: string }> {
    const response = await fetch(`${stack.url}${path}`, { method: 'POST', headers: headers(extra), body: body === undefined ? undefined : JSON.stringify(body) });
    expect([200, 201, 202], await response.clone().text()).toContain(response.status);
    return (await response.json()) as { id: string };
  }

  async function admitDemo(extra: Record<string, string> = {}): Promise<string> {
    const key = `trace-key-${hex(8)}`;
    const subject = `trace-subject-${hex(8)}`;
    secrets.push(key, subject);
    const { id } = await post('/api/operations', { taskType: 'demo.wait', subject: { type: 'demo', id: subject }, params: { durationMs: 1 } }, { 'idempotency-key': key, ...extra });
    return id;
  }

  /** The spans of the trace in which `operationId` was admitted, once its consumer span has been written. */
  async function traceOf(operationId: string): Promise<TraceFileLine[]> {
    return waitFor(
      () => {
        const spans = readTraceFile(traceFile);
        const admission = spans.find((s) => s.name === 'admission' && s.attributes['durable_ops.operation.id'] === operationId);
        const trace = admission ? spans.filter((s) => s.traceId === admission.traceId) : [];
        return trace.some((s) => s.name === 'wakeup process' && s.attributes['durable_ops.operation.id'] === operationId) ? trace : undefined;
      },
      { timeoutMs: 30_000, what: `the trace of ${operationId}` },
    );
  }

  const childOf = (parent: TraceFileLine) => (span: TraceFileLine) => span.parentSpanId === parent.spanId;

  it.skipIf(skip)('one operation is one trace: request → admission → wakeup publish → wakeup process → claim, attempt → completion', async () => {
    const id = await admitDemo();
    const trace = await traceOf(id);

    const request = onlySpan(trace, (s) => s.kind === 'SERVER', 'SERVER span');
    expect(request).toMatchObject({
      name: 'POST /api/operations',
      attributes: { 'http.request.method': 'POST', 'http.route': '/api/operations', 'http.response.status_code': 202 },
    });
    expect(request.parentSpanId, 'no traceparent was sent: the request span starts the trace').toBeUndefined();
    const admission = onlySpan(trace, (s) => s.name === 'admission', 'admission span');
    expect(admission).toMatchObject({ parentSpanId: request.spanId, attributes: { 'durable_ops.operation.id': id, 'durable_ops.task_type': 'demo.wait', 'durable_ops.outcome': 'admitted' } });
    const publish = onlySpan(trace, childOf(admission), 'child of the admission');
    expect(publish).toMatchObject({ name: 'wakeup publish', kind: 'PRODUCER', attributes: { 'messaging.system': 'aws_sqs', 'durable_ops.wakeup.reason': 'admitted' } });
    // The consumer's parent came through the SQS message attribute `traceparent` (fauxqs → poller → SQSRecord).
    const consumer = onlySpan(trace, childOf(publish), 'child of the publish span');
    expect(consumer).toMatchObject({
      name: 'wakeup process',
      kind: 'CONSUMER',
      attributes: { 'messaging.system': 'aws_sqs', 'messaging.operation.type': 'process', 'durable_ops.operation.id': id, 'durable_ops.outcome': 'succeeded' },
    });
    const claim = onlySpan(trace, (s) => s.name === 'claim', 'claim span');
    expect(claim).toMatchObject({ parentSpanId: consumer.spanId, attributes: { 'durable_ops.operation.id': id, 'durable_ops.attempt': 1 } });
    const attempt = onlySpan(trace, (s) => s.name === 'attempt', 'attempt span');
    expect(attempt).toMatchObject({ parentSpanId: consumer.spanId, attributes: { 'durable_ops.operation.id': id, 'durable_ops.attempt': 1, 'durable_ops.outcome': 'succeeded' } });
    const completion = onlySpan(trace, (s) => s.name === 'completion', 'completion span');
    expect(completion).toMatchObject({ parentSpanId: attempt.spanId, attributes: { 'durable_ops.outcome': 'succeeded' } });
    for (const span of trace) expect(span.status.code, span.name).not.toBe('ERROR');
  });

  it.skipIf(skip)('an incoming traceparent header is continued: the admission and its run join the caller’s trace', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const id = await admitDemo({ traceparent: `00-${traceId}-${callerSpanId}-01` });
    const trace = await traceOf(id);
    const request = onlySpan(trace, (s) => s.kind === 'SERVER', 'SERVER span');
    expect(request).toMatchObject({ traceId, parentSpanId: callerSpanId });
    expect(trace.map((s) => s.name)).toEqual(expect.arrayContaining(['admission', 'wakeup publish', 'wakeup process', 'claim', 'attempt', 'completion']));
  });

  it.skipIf(skip)('a caller cannot switch tracing off: a traceparent flagged not-sampled is still recorded', async () => {
    const traceId = hex(16);
    const id = await admitDemo({ traceparent: `00-${traceId}-${hex(8)}-00` });
    const trace = await traceOf(id);
    expect(onlySpan(trace, (s) => s.kind === 'SERVER', 'SERVER span').traceId).toBe(traceId);
    expect(trace.map((s) => s.name)).toEqual(expect.arrayContaining(['admission', 'wakeup publish', 'wakeup process', 'claim', 'attempt', 'completion']));
  });

  it.skipIf(skip)('a model task’s model request is a CLIENT span under its attempt', async () => {
    const marker = `PROMPT-MARKER-${hex(6)}`;
    const jobKey = `trace-snapshot-key-${hex(8)}`;
    secrets.push(marker, jobKey, '[stand-in]');
    const job = await post('/api/jobs', { title: 'SRE', company: 'Acme', description: `On call. ${marker}` });
    secrets.push(job.id);
    const { id } = await post(`/api/jobs/${job.id}/strategy-snapshot`, undefined, { 'idempotency-key': jobKey });
    const trace = await traceOf(id);
    const attempt = onlySpan(trace, (s) => s.name === 'attempt', 'attempt span');
    expect(attempt.attributes).toMatchObject({ 'durable_ops.task_type': 'strategy.snapshot', 'durable_ops.outcome': 'succeeded' });
    const model = onlySpan(trace, (s) => s.name === 'model call', 'model call span');
    expect(model).toMatchObject({ kind: 'CLIENT', parentSpanId: attempt.spanId, attributes: { 'durable_ops.model.route': 'local', 'durable_ops.outcome': 'ok' } });
    expect(onlySpan(trace, (s) => s.name === 'completion', 'completion span').parentSpanId).toBe(attempt.spanId);
  });

  it.skipIf(skip)('no span attribute holds a lease token, request hash, idempotency key, owner sub, subject, prompt or output', async () => {
    await tracing.flush();
    const spans = readTraceFile(traceFile);
    expect(spans.length).toBeGreaterThan(10);
    const values = attributeValues(spans);
    for (const secret of secrets) expect(values.filter((value) => value.includes(secret)), secret).toEqual([]);
    // Lease tokens are 64 hex digits and request hashes sha256 hex: no attribute carries such a run.
    expect(values.filter((value) => /[0-9a-f]{40,}/i.test(value))).toEqual([]);
    const names = spans.flatMap((span) => Object.keys(span.attributes));
    expect(names.filter((name) => /param|prompt|output|token|idempotency|hash|subject|owner|message\b/i.test(name))).toEqual([]);
  });
});
