import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDbTime } from '../../lib/db/db-time.js';
import { openStore, type Store } from '../../lib/db/store.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation } from '../../lib/operations/lease/claim-operation.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { startTcpProxy, type TcpProxy } from '../../chaos/tcp-proxy.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

/** Each external call the task made: which attempt, when (host clock, ms; the database runs on this host). */
const calls: { attempt: number; at: number }[] = [];

/** A task whose "external calls" are recorded, every 50 ms, until its signal aborts. Lease: 3 s. */
const chattyTask = defineTask({
  type: 'test.chatty',
  paramsSchema: z.object({}).strict(),
  timeoutMs: 60_000,
  leaseSeconds: 3,
  async run({ attempt, signal }) {
    while (!signal.aborted) {
      calls.push({ attempt, at: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw signal.reason;
  },
});

describe('a worker cut off from MariaDB fences itself', () => {
  const skip = !hasMariadb();
  let t: TestDatabase;
  let proxy: TcpProxy;
  let partitioned: Store;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase('mariadb');
    const direct = new URL(t.url);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port || 3306));
    const viaProxy = new URL(t.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    partitioned = openStore(viaProxy.toString(), { poolSize: 4 });
  });
  afterAll(async () => {
    await partitioned?.destroy();
    await proxy?.close();
    await t?.drop();
  });

  it.skipIf(skip)(
    'no external call of an attempt arrives after its lease ended on the database clock, though its heartbeats hang for 5 s',
    async () => {
      const deps = testDeps({ heartbeatMs: 1_000 });
      deps.registry.register(chattyTask);
      const owner = new OwnerScope(t.store, 'fenced');
      const { operation } = await admitOperation(owner, deps, 'fence-1', { taskType: 'test.chatty', subject: { type: 'doc', id: 'f1' } });
      // Worker 1 reaches MariaDB only through the proxy.
      const first = processWakeup({ ...deps, store: partitioned }, () => 600_000);
      await waitFor(() => calls.some((call) => call.attempt === 1), { timeoutMs: 10_000 });
      proxy.cut();
      const cutAt = Date.now();
      // The lease ends on the database clock; the sweeper (direct connection) makes the operation retryable.
      let leaseEnd = 0;
      await waitFor(async () => {
        const row = await t.store.db.selectFrom('operations').select(['lease_expires_at']).where('id', '=', operation.id).executeTakeFirstOrThrow();
        leaseEnd = row.lease_expires_at ? parseDbTime(row.lease_expires_at).getTime() : leaseEnd;
        const counts = await runSweepOnce({ ...deps, store: t.store, batchSize: 10, timeBudgetMs: 5_000 });
        return counts.leasesRetried === 1;
      }, { timeoutMs: 15_000 });
      // Worker 2 (direct) claims attempt 2 while worker 1 is still cut off.
      const second = await claimNextOperation(new WorkerScope(t.store), deps);
      expect(second).toMatchObject({ operationId: operation.id, attempt: 2 });
      await waitFor(() => Date.now() - cutAt >= 5_000, { timeoutMs: 10_000 });
      proxy.restore();
      expect(await first).toBe('lease_lost');
      const late = calls.filter((call) => call.attempt === 1 && call.at >= leaseEnd);
      expect({ leaseEnd: new Date(leaseEnd).toISOString(), late }).toEqual({ leaseEnd: new Date(leaseEnd).toISOString(), late: [] });
      // Nothing attempt 1 could write landed: the operation is attempt 2's.
      const row = await t.store.db.selectFrom('operations').selectAll().where('id', '=', operation.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'running', attempt: 2, lease_token: second?.leaseToken });
    },
    60_000,
  );
});
