import { setTimeout as pause } from 'node:timers/promises';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../lib/db/store.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { acknowledgeCancel, completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { RecordingMetrics } from '../support/recording-observability.js';
import { createTestDatabase, hasMariadb, implementationDatabase, IMPLEMENTATIONS, type TestDatabase } from '../support/test-store.js';

// Per-owner running limits (docs/design.md §4, fair share): at most N operations of one task type running per owner,
// held as `running:<task type>:<owner>` slot rows, taken at claim and given back whenever an attempt leaves `running`.

const TABLES = ['operation_notifications', 'operation_events', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings', 'owner_turns'] as const;

// A conformance suite: the same cases for the stored procedures and the in-process statements (docs/design.md §9).
describe.each(IMPLEMENTATIONS)('per-owner running limits: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines }, { tables: TABLES });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps> & { metrics: RecordingMetrics };
  let seq = 0;

  beforeEach(async () => {
    if (skip) return;
    deps = { ...testDeps({}, { perOwner: 50, runningPerOwner: 2, file: { plans: { pro: { runningPerOwner: 3 } } } }), metrics: new RecordingMetrics() };
  });

  const owner = (id: string) => new OwnerScope(db.store, id);
  const admit = async (ownerUserId: string, taskType = 'test.noop', params: Record<string, unknown> = {}) =>
    (await admitOperation(owner(ownerUserId), deps, `k-${++seq}`, { taskType, subject: { type: 'doc', id: `d${seq}` }, params })).operation.id;
  const claim = () => claimNextOperation(new WorkerScope(db.store), deps);
  const claimAll = async () => {
    const claims: ClaimedOperation[] = [];
    for (let c = await claim(); c; c = await claim()) claims.push(c);
    return claims;
  };
  const rowOf = (id: string) => db.store.db.selectFrom('operations').select(['status', 'attempt']).where('id', '=', id).executeTakeFirstOrThrow();
  const sweep = () => runSweepOnce({ store: db.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });

  it.skipIf(skip)('an owner at its running limit is passed over without spending an attempt, and another owner is served instead', async () => {
    const hogs = [await admit('hog'), await admit('hog'), await admit('hog'), await admit('hog')];
    const light = await admit('light');
    const claims = await claimAll();
    expect(claims.filter((c) => c.ownerUserId === 'hog')).toHaveLength(2);
    expect(claims.filter((c) => c.ownerUserId === 'light').map((c) => c.operationId)).toEqual([light]);
    const waiting = hogs.filter((id) => !claims.some((c) => c.operationId === id));
    for (const id of waiting) expect(await rowOf(id)).toEqual({ status: 'queued', attempt: 0 });
    expect(await heldCapacity(db.store, 'running:test.noop:hog')).toBe(2);
    expect(deps.metrics.total(MetricName.ClaimSkippedOwnerAtLimit, 'test.noop')).toBeGreaterThanOrEqual(1);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('limits are per task type and per plan: a pro owner runs its larger limit', async () => {
    await setOwnerPlan(db.store, 'paying', 'pro');
    for (let i = 0; i < 5; i++) await admit('paying');
    for (let i = 0; i < 5; i++) await admit('paying', 'test.stubborn', { durationMs: 0 });
    const claims = await claimAll();
    expect(claims.filter((c) => c.taskType === 'test.noop')).toHaveLength(3);
    expect(claims.filter((c) => c.taskType === 'test.stubborn')).toHaveLength(3);
  });

  it.skipIf(skip)('every attempt end gives the running slot back: success, retry wait, final failure, cancel acknowledged, lease expiry', async () => {
    for (let i = 0; i < 16; i++) await admit('alice');
    const worker = new WorkerScope(db.store);
    const held = () => heldCapacity(db.store, 'running:test.noop:alice');
    const next = async () => (await claimNextOperation(worker, deps)) as ClaimedOperation;
    const ends: Array<[string, (c: ClaimedOperation) => Promise<unknown>]> = [
      ['success', (c) => completeOperation(enterOwnerScope(worker, c), c)],
      ['retry wait', (c) => failOperation(enterOwnerScope(worker, c), c, { kind: 'retryable', message: 'again' }, 60_000, 60_000)],
      ['final failure', (c) => failOperation(enterOwnerScope(worker, c), c, { kind: 'permanent', message: 'no' }, 0, 0)],
      [
        'cancel acknowledged',
        async (c) => {
          await cancelOperation(owner('alice'), c.operationId);
          await acknowledgeCancel(enterOwnerScope(worker, c), c);
        },
      ],
    ];
    for (const [end, finish] of ends) {
      const [a, b] = [await next(), await next()];
      expect(await claimNextOperation(worker, deps), `${end}: a third claim while two run`).toBeNull();
      await finish(a);
      expect(await held(), end).toBe(1);
      const c = await next();
      expect(c, `${end}: the freed slot is claimable at once`).not.toBeNull();
      await completeOperation(enterOwnerScope(worker, b), b);
      await completeOperation(enterOwnerScope(worker, c), c);
      expect(await held(), end).toBe(0);
    }
    // lease expiry: the sweeper's move out of `running` gives the slot back too
    await next();
    await next();
    db.t.clock.advance(deps.policy.leaseMs + 1);
    await sweep();
    expect(await held()).toBe(0);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)("a run that ends while its owner has work waiting wakes a worker for it: the passed-over operation starts without the sweeper", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    deps = { ...testDeps({}, { perOwner: 50, runningPerOwner: 1 }), metrics: new RecordingMetrics() };
    deps.registry.register(defineTask({ type: 'test.gated', paramsSchema: z.object({}).strict(), timeoutMs: 30_000, run: () => gate }));
    const workerDeps = { ...deps, store: db.store };
    const first = await admit('hog', 'test.gated');
    const second = await admit('hog', 'test.gated');
    const running = processWakeup(workerDeps, () => 60_000);
    await expect.poll(async () => (await rowOf(first)).status).toBe('running');
    // the second admission's wake-up: the owner is at its limit, so it is consumed without a claim
    expect(await processWakeup(workerDeps, () => 60_000)).toBe('idle');
    const hintsBefore = deps.wakeups.sent.length;
    release();
    await running;
    expect(deps.wakeups.sent.slice(hintsBefore).map((s) => s.message.reason)).toEqual(['capacity_freed']);
    expect(await processWakeup(workerDeps, () => 60_000)).not.toBe('idle');
    expect(await rowOf(second)).toMatchObject({ status: 'succeeded', attempt: 1 });
    // The turn outlives its last operation until a claim finds nothing due, so that run's end may send one more hint:
    // the claim it wakes comes back idle and retires the turn.
    expect(deps.wakeups.sent.length - hintsBefore).toBeLessThanOrEqual(2);
    expect(await processWakeup(workerDeps, () => 60_000)).toBe('idle');
    expect(await db.store.db.selectFrom('owner_turns').selectAll().where('owner_user_id', '=', 'hog').execute()).toEqual([]);
  });

  it.skipIf(skip)('wake-ups spent on two owners at their limit are made good: every operation runs on the hints runs send, with no sweeper', async () => {
    // SQS modelled in memory: one message per admission, and every hint the worker sends goes back in; one invocation
    // per message. Runs wait on gates the test opens one at a time.
    const gates: Array<() => void> = [];
    let onGate: () => void = () => {};
    deps = { ...testDeps({}, { perOwner: 50, runningPerOwner: 1 }), metrics: new RecordingMetrics() };
    deps.registry.register(
      defineTask({
        type: 'test.gated',
        paramsSchema: z.object({}).strict(),
        timeoutMs: 30_000,
        run: () =>
          new Promise<void>((resolve) => {
            gates.push(resolve);
            onGate();
          }),
      }),
    );
    const workerDeps = { ...deps, store: db.store };
    const ids = [await admit('a', 'test.gated'), await admit('b', 'test.gated'), await admit('b', 'test.gated'), await admit('b', 'test.gated')];
    const queue = deps.wakeups.sent.splice(0).map((sent) => sent.message);
    const running: Promise<unknown>[] = [];
    // Delivers every queued message: each invocation comes back (idle) or starts a run (a new gate), kept in `running`.
    const drain = async () => {
      for (let message = queue.shift(); message; message = queue.shift()) {
        const started = new Promise<'started'>((resolve) => (onGate = () => resolve('started')));
        const invocation = processWakeup(workerDeps, () => 60_000, message);
        if ((await Promise.race([invocation, started])) === 'started') running.push(invocation);
        queue.push(...deps.wakeups.sent.splice(0).map((sent) => sent.message));
      }
    };
    await drain();
    expect(gates).toHaveLength(2); // a1 and b1 run; the other two messages found their owners at the limit
    for (let opened = 0; opened < 10 && gates.length > 0; opened++) {
      (gates.shift() as () => void)();
      await running.shift();
      queue.push(...deps.wakeups.sent.splice(0).map((sent) => sent.message));
      await drain();
    }
    for (const id of ids) expect(await rowOf(id)).toEqual({ status: 'succeeded', attempt: 1 });
  });

  it.skipIf(skip)('the sweeper reclaims a leaked running slot (its holder no longer running)', async () => {
    const id = await admit('alice');
    const claimed = (await claim()) as ClaimedOperation;
    expect(claimed.operationId).toBe(id);
    // A leak: the row left `running` without its slot being given back (as a hand edit or a bug would leave it).
    await db.store.db.updateTable('operations').set({ status: 'queued', lease_token: null, lease_expires_at: null, attempt: 0 }).where('id', '=', id).execute();
    expect(await heldCapacity(db.store, 'running:')).toBe(1);
    expect((await sweep()).capacityReclaimed).toBe(1);
    expect(await heldCapacity(db.store, 'running:')).toBe(0);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a raised limit applies at the next claim: the missing slot rows are created, not read as "full"', async () => {
    for (let i = 0; i < 4; i++) await admit('grower');
    expect(await claimAll()).toHaveLength(2);
    await setOwnerPlan(db.store, 'grower', 'pro');
    expect(await claimAll()).toHaveLength(1);
    expect(await heldCapacity(db.store, 'running:test.noop:grower')).toBe(3);
  });
});

describe.skipIf(!hasMariadb())('the running limit under concurrency on MariaDB', () => {
  const LIMIT = 3;
  const CLAIMERS = 16;
  let t: TestDatabase;
  let stores: Store[] = [];
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    // Sixteen processes' worth of claimers: a store each, so their claims are separate transactions on separate
    // connections (claims of one store share a group transaction).
    stores = Array.from({ length: CLAIMERS }, () => openStore(t.url, { clockOffsetMs: () => t.clock.offsetMs, poolSize: 2 }));
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.destroy()));
    await t?.drop();
  });

  it(`${CLAIMERS} concurrent claimers never run more than ${LIMIT} of one owner's operations at once, and every operation runs once`, async () => {
    let running = 0;
    let most = 0;
    const runs: string[] = [];
    const base = testDeps({}, { perOwner: 100, runningPerOwner: LIMIT });
    base.registry.register(
      defineTask({
        type: 'test.held',
        paramsSchema: z.object({ n: z.number().int() }).strict(),
        timeoutMs: 30_000,
        async run({ params }) {
          running++;
          most = Math.max(most, running);
          // Hold the run until the owner's limit is reached (or half a second passed), so the test sees the limit
          // filled — work-conserving — and would see it exceeded.
          for (const started = performance.now(); running < LIMIT && performance.now() - started < 500; ) await pause(2);
          await pause(5);
          runs.push(String(params.n));
          running--;
        },
      }),
    );
    const total = 40;
    const owner = new OwnerScope(t.store, 'crowd');
    for (let n = 0; n < total; n++) await admitOperation(owner, base, `h-${n}`, { taskType: 'test.held', subject: { type: 'doc', id: `${n}` }, params: { n } });
    const succeeded = async () =>
      Number((await t.store.db.selectFrom('operations').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'succeeded').executeTakeFirst())?.n);
    const claimer = async (store: Store) => {
      const deps = { ...base, store };
      while ((await succeeded()) < total) if ((await processWakeup(deps, () => 60_000)) === 'idle') await pause(3); // an idle worker backs off briefly
    };
    await Promise.all(stores.map(claimer));
    expect(most).toBe(LIMIT);
    expect(runs.sort()).toEqual(Array.from({ length: total }, (_, n) => String(n)).sort());
    const attempts = await t.store.db.selectFrom('operations').select('attempt').distinct().execute();
    expect(attempts.map((a) => a.attempt)).toEqual([1]);
    expect(await heldCapacity(t.store, 'running:')).toBe(0);
    await expectCapacityMatchesActive(t.store);
  });
});
