import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation } from '../../lib/operations/lease/claim-operation.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce, type SweepCounts } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

const OPERATIONS = 300;

describe.skipIf(!hasMariadb())('concurrent sweepers on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('three sweepers racing over expired leases act on each row exactly once, with one notification per terminal row', async () => {
    const deps = testDeps({}, { perOwner: OPERATIONS });
    const owner = new OwnerScope(t.store, 'sweep-owner');
    for (let i = 0; i < OPERATIONS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => admitOperation(owner, deps, `s-${i + j}`, { taskType: 'test.noop', subject: { type: 'doc', id: `${i + j}` } })),
      );
    }
    // Half of them are on their final attempt, so their expiry is terminal.
    for (const digit of ['0', '2', '4', '6', '8']) {
      await t.store.db.updateTable('operations').set({ max_attempts: 1 }).where('subject_id', 'like', `%${digit}`).execute();
    }
    const worker = new WorkerScope(t.store);
    while (await claimNextOperation(worker, deps));
    t.clock.advance(deps.policy.leaseMs + 1);

    const sweep = () => runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 20, timeBudgetMs: 60_000 });
    const results: SweepCounts[] = await Promise.all([sweep(), sweep(), sweep()]);
    const total = (key: 'leasesRetried' | 'leasesFailed') => results.reduce((sum, r) => sum + r[key], 0);
    expect(total('leasesRetried')).toBe(OPERATIONS / 2);
    expect(total('leasesFailed')).toBe(OPERATIONS / 2);

    const byStatus = await t.store.db.selectFrom('operations').select(['status', t.store.db.fn.countAll<number>().as('n')]).groupBy('status').orderBy('status').execute();
    expect(byStatus.map((r) => [r.status, Number(r.n)])).toEqual([
      ['failed', OPERATIONS / 2],
      ['waiting_for_retry', OPERATIONS / 2],
    ]);
    const notifications = await t.store.db.selectFrom('operation_notifications').select('operation_id').execute();
    expect(notifications).toHaveLength(OPERATIONS / 2);
    expect(new Set(notifications.map((n) => n.operation_id)).size).toBe(OPERATIONS / 2);
    // every retried row was woken exactly once across the three sweepers
    const woken = deps.wakeups.sent.filter((s) => s.message.reason === 'sweeper').map((s) => s.message.operationId);
    expect(woken).toHaveLength(OPERATIONS / 2);
    expect(new Set(woken).size).toBe(OPERATIONS / 2);
  });
});
