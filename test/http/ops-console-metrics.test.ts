import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { SWEEPER_RUN_RETENTION_MS } from '../../lib/sweeper/sweeper-runs.js';
import type { ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const CAPACITY = capacityPolicy({ perOwner: 3, global: 50, retryAfterSeconds: 5 }, { routes: { 'local-model': 1 }, plans: { pro: { perOwner: 7 } } });

describe.each(DIALECTS)('operator console: capacity, sweeps and throughput, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let keySeq = 0;

  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect, { capacity: CAPACITY });
  });
  afterAll(async () => app?.drop());

  const ops = (path: string): Promise<ParsedResponse> => app.call({ method: 'GET', path, owner: 'ops-alice', scope: 'ops:read' });
  const admitWait = async (owner: string) => {
    const response = await app.call({
      method: 'POST',
      path: '/api/operations',
      owner,
      headers: { 'idempotency-key': `metrics-${++keySeq}` },
      body: { taskType: 'demo.wait', subject: { type: 'doc', id: 'd1' }, params: { durationMs: 0 } },
    });
    expect(response.status).toBe(202);
    return response.json.id as string;
  };
  const sweep = () =>
    runSweepOnce({ store: app.db.store, policy: app.deps.policy, wakeups: app.wakeups, logger: app.deps.logger, metrics: app.deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
  const sum = (buckets: any[], field: string) => buckets.reduce((total, bucket) => total + bucket[field], 0);

  it.skipIf(skip)('capacity: global pools in use, every configured route, owner and running pools with their plan’s limit and what they hold', async () => {
    await setOwnerPlan(app.db.store, 'bob', 'pro');
    const alice = await app.admitAndClaim('alice', 'cap-1');
    await completeOperation(alice.scope, alice.claim);
    await app.admitAndClaim('alice', 'cap-2');
    await admitWait('bob');

    const response = await ops('/api/ops/capacity');
    expect(response.status).toBe(200);
    expect(response.json.pools).toEqual([
      { poolKey: 'global:demo.wait', kind: 'global', slots: 50, held: 1 },
      { poolKey: 'global:test.claimable', kind: 'global', slots: 50, held: 1 },
      { poolKey: 'route:local-model', kind: 'route', slots: 1, held: 0 },
      { poolKey: 'owner:demo.wait:bob', kind: 'owner', slots: 7, held: 1 },
      { poolKey: 'owner:test.claimable:alice', kind: 'owner', slots: 3, held: 1 },
      // alice's cap-2 runs (cap-1 gave its running slot back when it ended); the running limit defaults to 4.
      { poolKey: 'running:test.claimable:alice', kind: 'running', slots: 4, held: 1 },
    ]);
    expect(response.json.runningByTaskType).toEqual([{ taskType: 'test.claimable', running: 1, owners: 1 }]);
  });

  it.skipIf(skip)('capacity lists the 50 owners holding the most, most first, ties by key; owners holding none are left out', async () => {
    const rows = Array.from({ length: 60 }, (_, i) => ({ task_type: 'demo.wait', owner_user_id: `zz-${String(i).padStart(2, '0')}`, active: i < 5 ? 3 : i < 55 ? 2 : 0, running: 0 }));
    await app.db.store.db.insertInto('owner_capacity').values(rows).execute();
    const owners = (await ops('/api/ops/capacity')).json.pools.filter((pool: any) => pool.kind === 'owner');
    expect(owners).toHaveLength(50);
    const expected = [...Array.from({ length: 5 }, (_, i) => [i, 3]), ...Array.from({ length: 45 }, (_, i) => [i + 5, 2])].map(([i, held]) => ({
      poolKey: `owner:demo.wait:zz-${String(i).padStart(2, '0')}`,
      kind: 'owner',
      slots: 3,
      held,
    }));
    expect(owners).toEqual(expected);
    await app.db.store.db.deleteFrom('owner_capacity').where('owner_user_id', 'like', 'zz-%').execute();
  });

  it.skipIf(skip)('throughput: one bucket per minute, oldest first, zero-filled; admissions, successes, failures and cancels counted, owner retries not admissions', async () => {
    const before = (await ops('/api/ops/throughput?minutes=10')).json.buckets;
    const done = await app.admitAndClaim('carol', 'tp-1');
    await completeOperation(done.scope, done.claim);
    const failed = await app.admitAndClaim('carol', 'tp-2');
    await failOperation(failed.scope, failed.claim, { kind: 'permanent', message: 'no' }, 0, 60_000);
    expect((await app.call({ method: 'POST', path: `/api/operations/${failed.operationId}/retry`, owner: 'carol' })).status).toBe(202);
    expect((await app.call({ method: 'POST', path: `/api/operations/${failed.operationId}/cancel`, owner: 'carol' })).status).toBe(200);

    const response = await ops('/api/ops/throughput?minutes=10');
    expect(response.status).toBe(200);
    const buckets: any[] = response.json.buckets;
    expect(buckets).toHaveLength(10);
    const starts = buckets.map((bucket) => Date.parse(bucket.minute));
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBe(60_000);
    for (const start of starts) expect(start % 60_000).toBe(0);
    const delta = (field: string) => sum(buckets, field) - sum(before, field);
    // Two admissions (the retry is not one), one success, one failure, one cancel: a minute boundary may split them.
    expect({ admitted: delta('admitted'), succeeded: delta('succeeded'), failed: delta('failed'), cancelled: delta('cancelled') }).toEqual({
      admitted: 2,
      succeeded: 1,
      failed: 1,
      cancelled: 1,
    });

    // Three minutes later (database clock) a new admission lands in a later bucket; the earlier ones keep their counts.
    app.db.clock.advance(180_000);
    await admitWait('carol');
    const later: any[] = (await ops('/api/ops/throughput?minutes=10')).json.buckets;
    expect(later.at(-1).admitted).toBe(1);
    expect(sum(later, 'admitted')).toBe(sum(buckets, 'admitted') + 1);
    expect(Date.parse(later.at(-1).minute) - Date.parse(buckets.at(-1).minute)).toBe(180_000);
  });

  it.skipIf(skip)('throughput: 60 minutes by default; minutes must be 1–1440 (operators only see a 400)', async () => {
    expect((await ops('/api/ops/throughput')).json.buckets).toHaveLength(60);
    expect((await ops('/api/ops/throughput?minutes=1440')).json.buckets).toHaveLength(1440);
    for (const bad of ['0', '1441', 'abc', '1e2', '-5']) {
      const response = await ops(`/api/ops/throughput?minutes=${bad}`);
      expect(response.status, bad).toBe(400);
      expect(response.json.code).toBe('validation_failed');
    }
    expect((await ops('/api/ops/throughput?hours=1')).status).toBe(400);
  });

  it.skipIf(skip)('sweeps: every runSweepOnce is listed, newest first, with its start, end and counts', async () => {
    const counts = [await sweep(), await sweep()];
    const response = await ops('/api/ops/sweeps?limit=2');
    expect(response.status).toBe(200);
    const items: any[] = response.json.items;
    expect(items.map((item) => item.counts)).toEqual([counts[1], counts[0]]);
    for (const item of items) expect(Date.parse(item.finishedAt)).toBeGreaterThanOrEqual(Date.parse(item.startedAt));
    expect(Date.parse(items[0].finishedAt)).toBeGreaterThanOrEqual(Date.parse(items[1].finishedAt));
    expect((await ops('/api/ops/sweeps')).json.items.length).toBeGreaterThanOrEqual(2);
    expect((await ops('/api/ops/sweeps?limit=101')).status).toBe(400);
  });

  it.skipIf(skip)('a stored run whose counts another release wrote is left out of the list, not a 500', async () => {
    await sweep();
    const newest = await app.db.store.db.selectFrom('sweeper_runs').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow();
    await app.db.store.db.updateTable('sweeper_runs').set({ counts: '{"renamedCount":1}' }).where('id', '=', newest.id).execute();
    const before = (await ops('/api/ops/sweeps?limit=100')).json.items.length;
    await sweep();
    const response = await ops('/api/ops/sweeps?limit=100');
    expect(response.status).toBe(200);
    expect(response.json.items).toHaveLength(before + 1);
  });

  it.skipIf(skip)('sweeps are kept 7 days: a run that long after deletes the older records in the same pass', async () => {
    const before = await app.db.store.db.selectFrom('sweeper_runs').select('id').execute();
    expect(before.length).toBeGreaterThanOrEqual(2);
    app.db.clock.advance(SWEEPER_RUN_RETENTION_MS + 60_000);
    await sweep();
    const after = await app.db.store.db.selectFrom('sweeper_runs').select('id').execute();
    expect(after).toHaveLength(1);
    expect(before.map((row) => row.id)).not.toContain(after[0]!.id);
    expect((await ops('/api/ops/sweeps')).json.items).toHaveLength(1);
  });
});
