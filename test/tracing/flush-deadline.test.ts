import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { tracer } from '../../lib/tracing/spans.js';
import { FLUSH_DEADLINE_MS, OTLP_EXPORT_TIMEOUT_MS, startTracing } from '../../lib/tracing/start-tracing.js';

/** A loopback port nothing listens on: bound, then closed, so a connection to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// Its own file: tracing is set up once per process (vitest runs each file in a fresh worker).
describe('the end-of-invocation flush with an unreachable collector', () => {
  it('waits at most FLUSH_DEADLINE_MS, not the exporter’s retry time: a collector that is down costs spans, not seconds per invocation', async () => {
    const tracing = startTracing({ exporter: 'otlp', otlpUrl: `http://127.0.0.1:${await closedPort()}/v1/traces`, serviceName: 'flush-test' });
    expect(tracing.enabled).toBe(true);
    tracer.startSpan('queued for export').end();
    const started = performance.now();
    await tracing.flush();
    const waitedMs = performance.now() - started;
    // The bound under test is FLUSH_DEADLINE_MS (300 ms); the margin is for a loaded machine, and stays far below the
    // exporter's own OTLP_EXPORT_TIMEOUT_MS (5 s), which the flush waited for before the deadline existed.
    expect(waitedMs).toBeGreaterThanOrEqual(0);
    expect(waitedMs).toBeLessThan(Math.min(OTLP_EXPORT_TIMEOUT_MS / 2, FLUSH_DEADLINE_MS + 1_500));
    await tracing.shutdown();
  });
});
