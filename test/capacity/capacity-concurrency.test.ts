import { setTimeout as pause } from 'node:timers/promises';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CapacityExhaustedError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

type Deps = ReturnType<typeof testDeps>;

/** Admits concurrently; returns how many were accepted and the refusals. */
async function admitConcurrently(deps: Deps, requests: Array<{ owner: OwnerScope; key: string }>) {
  const results = await Promise.allSettled(
    requests.map(({ owner, key }) => admitOperation(owner, deps, key, { taskType: 'test.noop', subject: { type: 'doc', id: key } })),
  );
  const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  expect(refused.every((e) => e instanceof CapacityExhaustedError && e.retryAfterSeconds === 7), String(refused.find((e) => !(e instanceof CapacityExhaustedError)))).toBe(true);
  return { accepted: results.length - refused.length, refused };
}

describe.skipIf(!hasMariadb())('capacity under concurrency on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb', { poolSize: 24 });
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    for (const table of ['operation_notifications', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings'] as const) await t.store.db.deleteFrom(table).execute();
  });

  it('200 concurrent admissions for one owner with a per-owner limit of 5: exactly 5 accepted, then 5 more once they finish', async () => {
    const deps = testDeps({}, { perOwner: 5, global: 1000 });
    const owner = new OwnerScope(t.store, 'crowd');
    const first = await admitConcurrently(deps, Array.from({ length: 200 }, (_, i) => ({ owner, key: `a-${i}` })));
    expect(first.accepted).toBe(5);
    expect(first.refused).toHaveLength(195);
    expect(await heldCapacity(t.store, 'owner:')).toBe(5);
    const worker = new WorkerScope(t.store);
    for (let claim = await claimNextOperation(worker, deps); claim; claim = await claimNextOperation(worker, deps)) {
      await completeOperation(enterOwnerScope(worker, claim), claim);
    }
    const second = await admitConcurrently(deps, Array.from({ length: 200 }, (_, i) => ({ owner, key: `b-${i}` })));
    expect(second.accepted).toBe(5);
    await expectCapacityMatchesActive(t.store);
  });

  it('the sweeper reconciling owner counters while owners admit, claim and complete never changes a counter that was right', async () => {
    const deps = testDeps({}, { perOwner: 3, global: 1000, runningPerOwner: 2 });
    const owners = Array.from({ length: 4 }, (_, i) => new OwnerScope(t.store, `busy-${i}`));
    const worker = new WorkerScope(t.store);
    const sweep = () => runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
    const runOne = async () => {
      const claim = await claimNextOperation(worker, deps);
      if (claim) await completeOperation(enterOwnerScope(worker, claim), claim);
    };
    let corrected = 0;
    for (let round = 0; round < 30; round++) {
      // Real concurrency: every owner admits twice, four workers claim and complete, two sweepers reconcile — at once.
      const [, , ...sweeps] = await Promise.all([
        admitConcurrently(deps, owners.flatMap((owner, i) => [0, 1].map((j) => ({ owner, key: `r${round}-${i}-${j}` })))),
        Promise.all(Array.from({ length: 4 }, runOne)),
        sweep(),
        sweep(),
      ]);
      corrected += sweeps.reduce((sum, counts) => sum + counts.capacityReclaimed, 0);
      await expectCapacityMatchesActive(t.store);
    }
    expect(corrected).toBe(0);
  });

  it('the global limit holds across 50 owners, and a pro owner gets its larger per-owner limit', async () => {
    const deps = testDeps({}, { perOwner: 10, global: 20 });
    const owners = Array.from({ length: 50 }, (_, i) => new OwnerScope(t.store, `many-${i}`));
    const all = await admitConcurrently(deps, owners.flatMap((owner, i) => Array.from({ length: 4 }, (_, j) => ({ owner, key: `g-${i}-${j}` }))));
    expect(all.accepted).toBe(20);
    expect(await heldCapacity(t.store, 'global:')).toBe(20);

    const tiers = testDeps({}, { perOwner: 3, global: 1000, file: { plans: { pro: { perOwner: 8 } } } });
    await setOwnerPlan(t.store, 'paying', 'pro');
    const free = new OwnerScope(t.store, 'thrifty');
    const pro = new OwnerScope(t.store, 'paying');
    expect((await admitConcurrently(tiers, Array.from({ length: 20 }, (_, i) => ({ owner: free, key: `f-${i}` })))).accepted).toBe(3);
    expect((await admitConcurrently(tiers, Array.from({ length: 20 }, (_, i) => ({ owner: pro, key: `p-${i}` })))).accepted).toBe(8);
    await expectCapacityMatchesActive(t.store);
  });

  it('with an execution limit of 1 and 8 concurrent workers, no two runs of the route overlap and none loses an attempt', async () => {
    const runs: Array<{ start: number; end: number }> = [];
    const deps = { ...testDeps({}, { file: { routes: { solo: 1 } } }), store: t.store };
    deps.registry.register(
      defineTask({
        type: 'test.solo',
        paramsSchema: z.object({}).strict(),
        timeoutMs: 30_000,
        capacityRoute: 'solo',
        async run() {
          const start = performance.now();
          await pause(10);
          runs.push({ start, end: performance.now() });
        },
      }),
    );
    const owner = new OwnerScope(t.store, 'solo-owner');
    const total = 24;
    for (let i = 0; i < total; i++) await admitOperation(owner, deps, `s-${i}`, { taskType: 'test.solo', subject: { type: 'doc', id: `${i}` } });
    const done = async () =>
      Number((await t.store.db.selectFrom('operations').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'succeeded').executeTakeFirst())?.n) === total;
    const workerLoop = async () => {
      while (!(await done())) if ((await processWakeup(deps, () => 60_000)) === 'idle') await pause(2); // an idle worker backs off briefly
    };
    await Promise.all(Array.from({ length: 8 }, () => workerLoop()));

    expect(runs).toHaveLength(total);
    runs.sort((a, b) => a.start - b.start);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.start, `run ${i} started before run ${i - 1} ended`).toBeGreaterThanOrEqual(runs[i - 1]!.end);
    const attempts = await t.store.db.selectFrom('operations').select('attempt').distinct().execute();
    expect(attempts.map((a) => a.attempt)).toEqual([1]);
    // every finished run on the limited route woke a worker for the next waiting operation
    expect(deps.wakeups.sent.filter((s) => s.message.reason === 'capacity_freed')).toHaveLength(total);
    await expectCapacityMatchesActive(t.store);
  });
});
