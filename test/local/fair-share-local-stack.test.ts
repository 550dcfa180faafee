import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { startLocalStack, type LocalStack } from '../../lib/local/local-stack.js';
import { silentLogger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import type { Observability } from '../../lib/observability/observability.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

/**
 * The reproduction on the real local stack (HTTP server, fauxqs, the SQS poller with its default execution
 * model, the sweeper): owner `hog` fills its running limit with long `demo.wait` runs, then another owner's 1 ms
 * `demo.wait` must start within one wake-up cycle. With the poller's old defaults (batches of 10, 4 at once) each of
 * hog's runs pinned a whole invocation and the short operation's wake-up was not even received until one ended.
 */

const SECRET = 'fair-share-local-stack-secret-of-32-chars';
const quiet: Observability = Object.freeze({ logger: silentLogger, metrics: noopMetrics, middlewares: [] });

/** hog's runs: far longer than the test, so a short operation that waited for one would fail it clearly. */
const LONG_MS = 60_000;
/** The default running limit per owner and task type (`CAPACITY_RUNNING_PER_OWNER`), below the poller's W = 10. */
const RUNNING_LIMIT = loadConfig({}).CAPACITY_RUNNING_PER_OWNER;
/**
 * One wake-up cycle, with room for a busy CI machine: admission sends the wake-up, a free invocation's long poll
 * (1 s) receives it, the claim takes the row. A long run is 60 s.
 */
const ONE_WAKEUP_CYCLE_MS = 5_000;

interface OperationDto {
  id: string;
  status: string;
}

describe.each(DIALECTS)('fair share on the local stack on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let stack: LocalStack;
  let hog: string;
  let other: string;
  const hogIds: string[] = [];

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect, { migrate: false });
    const config = loadConfig({
      DATABASE_URL: t.url,
      PORT: '0',
      DEMO_TASKS: '1',
      DEV_JWT_SECRET: SECRET,
      LEASE_SECONDS: '5',
      HEARTBEAT_SECONDS: '1',
      SWEEP_INTERVAL_SECONDS: '1',
      RETRY_BASE_SECONDS: '1',
    });
    stack = await startLocalStack(config, quiet);
    [hog, other] = await Promise.all([signDevToken('hog', SECRET), signDevToken('other', SECRET)]);
  });

  afterAll(async () => {
    // Cancel hog's runs (each stops at its next heartbeat, 1 s), so stopping the stack does not wait for them.
    if (stack) {
      await Promise.all(hogIds.map((id) => fetch(`${stack.url}/api/operations/${id}/cancel`, { method: 'POST', headers: bearer(hog) }).then((r) => r.body?.cancel())));
      await stack.stop();
    }
    await t?.drop();
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  async function admit(token: string, key: string, durationMs: number): Promise<string> {
    const response = await fetch(`${stack.url}/api/operations`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'demo', id: key }, params: { durationMs } }),
    });
    expect(response.status, await response.clone().text()).toBe(202);
    return ((await response.json()) as OperationDto).id;
  }

  async function statusOf(token: string, id: string): Promise<string> {
    const response = await fetch(`${stack.url}/api/operations/${id}`, { headers: bearer(token) });
    return ((await response.json()) as OperationDto).status;
  }

  /** Most of hog's operations seen running at once, sampled at every poll of the test. */
  let hogPeakRunning = 0;
  async function sampleHogRunning(): Promise<number> {
    const response = await fetch(`${stack.url}/api/operations?status=running&limit=100`, { headers: bearer(hog) });
    const running = ((await response.json()) as { items: OperationDto[] }).items.length;
    hogPeakRunning = Math.max(hogPeakRunning, running);
    return running;
  }

  it.skipIf(skip)(
    "another owner's operation starts within one wake-up cycle while hog holds its running limit of long runs, and hog never runs more than its limit",
    async () => {
      expect(RUNNING_LIMIT).toBe(4);
      // hog fills its running limit, one long run at a time (each in an invocation of its own), then admits one more.
      for (let i = 0; i < RUNNING_LIMIT; i++) {
        const id = await admit(hog, `hog-${i}`, LONG_MS);
        hogIds.push(id);
        await waitFor(
          async () => {
            await sampleHogRunning();
            return (await statusOf(hog, id)) === 'running';
          },
          { timeoutMs: 10_000, intervalMs: 100, what: `hog's run ${i + 1} to start` },
        );
      }
      const overLimit = await admit(hog, `hog-${RUNNING_LIMIT}`, LONG_MS);
      hogIds.push(overLimit);

      // Another owner's 1 ms operation starts within one wake-up cycle — not when one of hog's 60 s runs ends.
      const admittedAt = Date.now();
      const short = await admit(other, 'other-short', 1);
      const started = await waitFor(
        async () => {
          await sampleHogRunning();
          const status = await statusOf(other, short);
          return status === 'running' || status === 'succeeded' ? status : undefined;
        },
        { timeoutMs: ONE_WAKEUP_CYCLE_MS, intervalMs: 50, what: "the other owner's short operation to start within one wake-up cycle" },
      );
      expect(['running', 'succeeded']).toContain(started);
      expect(Date.now() - admittedAt).toBeLessThan(ONE_WAKEUP_CYCLE_MS + 1_000);
      await waitFor(
        async () => {
          await sampleHogRunning();
          return (await statusOf(other, short)) === 'succeeded';
        },
        { timeoutMs: ONE_WAKEUP_CYCLE_MS, intervalMs: 50, what: "the other owner's short operation to succeed" },
      );

      // hog never ran more than its running limit: its fifth operation is still queued, its four runs still running.
      expect(await sampleHogRunning()).toBe(RUNNING_LIMIT);
      expect(hogPeakRunning).toBe(RUNNING_LIMIT);
      expect(await statusOf(hog, overLimit)).toBe('queued');
    },
    60_000,
  );
});
