import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CapacityExhaustedError, NotEntitledError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan, updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { waitFor } from '../support/wait-for.js';
import { RecordingLogger } from '../support/recording-observability.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('capacity and owner settings on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['operation_notifications', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings', 'owner_turns'] as const) await t.store.db.deleteFrom(table).execute();
    t.clock.offsetMs = 0;
    deps = testDeps({}, { perOwner: 2, global: 3, file: { plans: { pro: { perOwner: 3 } }, routes: { solo: 1 } } });
  });

  const owner = (id: string) => new OwnerScope(t.store, id);
  const admit = (scope: OwnerScope, taskType = 'test.noop', params: Record<string, unknown> = {}) =>
    admitOperation(scope, deps, `k-${++seq}`, { taskType, subject: { type: 'doc', id: `d${seq}` }, params });
  const count = async () => Number((await t.store.db.selectFrom('operations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n);
  const sweep = () => runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });

  it.skipIf(skip)('a full per-owner pool refuses with Retry-After and writes nothing; a terminal operation frees its slot', async () => {
    const alice = owner('alice');
    const first = await admit(alice);
    await admit(alice);
    const sent = deps.wakeups.sent.length;
    const refused = await admit(alice).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CapacityExhaustedError);
    expect(refused).toMatchObject({ pool: 'owner', retryAfterSeconds: 7 });
    expect(await count()).toBe(2);
    expect(deps.wakeups.sent.length).toBe(sent);
    expect(await heldCapacity(t.store, 'owner:')).toBe(2);
    // a replay of an admitted key is not a new admission: it answers even while the pool is full
    expect((await admitOperation(alice, deps, `k-1`, { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} })).replayed).toBe(true);
    await cancelOperation(alice, first.operation.id);
    await admit(alice);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('the global pool bounds all owners together; a pro owner gets the larger per-owner limit', async () => {
    await setOwnerPlan(t.store, 'pat', 'pro');
    const pat = owner('pat');
    for (let i = 0; i < 3; i++) await admit(pat);
    await expect(admit(owner('bob'))).rejects.toMatchObject({ pool: 'global' });
    deps = testDeps({}, { perOwner: 2, global: 10, file: { plans: { pro: { perOwner: 3 } } } });
    await expect(admit(pat)).rejects.toMatchObject({ pool: 'owner' });
    await admit(owner('bob'));
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('an owner retry reserves capacity again and is refused with 429 semantics when the pool is full', async () => {
    const alice = owner('alice');
    const { operation } = await admit(alice);
    await cancelOperation(alice, operation.id);
    await admit(alice);
    await admit(alice);
    await expect(retryOperation(alice, deps, operation.id)).rejects.toBeInstanceOf(CapacityExhaustedError);
    expect((await getOperation(alice, operation.id)).status).toBe('cancelled');
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('a route at its execution limit leaves the operation waiting without spending an attempt', async () => {
    deps.registry.register({ ...deps.registry.get('test.noop'), type: 'test.solo', capacityRoute: 'solo' });
    const alice = owner('alice');
    const bob = owner('bob');
    const a = await admit(alice, 'test.solo');
    const b = await admit(bob, 'test.solo');
    const worker = new WorkerScope(t.store);
    const first = await claimNextOperation(worker, deps);
    expect(first?.operationId).toBe(a.operation.id);
    expect(await claimNextOperation(worker, deps)).toBeNull();
    expect(await getOperation(bob, b.operation.id)).toMatchObject({ status: 'queued', attempt: 0 });
    // other task types still run while the route is full
    const other = await admit(bob);
    expect((await claimNextOperation(worker, deps))?.operationId).toBe(other.operation.id);
    if (!first) return;
    await completeOperation(enterOwnerScope(worker, first), first);
    expect((await claimNextOperation(worker, deps))?.operationId).toBe(b.operation.id);
    expect((await getOperation(bob, b.operation.id)).attempt).toBe(1);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('a timed-out handler that ignores its signal keeps its route slot until it returns (within the grace)', async () => {
    const runs: Array<{ start: number; end: number }> = [];
    let idleClaims = 0;
    deps.registry.register({
      ...deps.registry.get('test.noop'),
      type: 'test.slow-solo',
      capacityRoute: 'solo',
      timeoutMs: 200,
      leaseSeconds: 3,
      async run({ signal }) {
        const start = performance.now();
        // Ignores its AbortSignal on purpose: once the timeout aborts it, it goes on until the other worker has tried
        // to claim again (and found the route full), and only then returns.
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        const idleBefore = idleClaims;
        await waitFor(() => idleClaims > idleBefore || undefined, { what: 'the other worker trying the full route' });
        runs.push({ start, end: performance.now() });
      },
    });
    await admit(owner('alice'), 'test.slow-solo');
    await admit(owner('bob'), 'test.slow-solo');
    const workerDeps = { ...deps, store: t.store };
    // two workers race for the route until both operations have run (an idle worker backs off briefly)
    const worker = async () => {
      const until = Date.now() + 15_000;
      while (runs.length < 2 && Date.now() < until) {
        if ((await processWakeup(workerDeps, () => 60_000)) === 'idle') {
          idleClaims++;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };
    await Promise.all([worker(), worker()]);
    expect(runs).toHaveLength(2);
    runs.sort((a, b) => a.start - b.start);
    expect(runs[1]!.start).toBeGreaterThanOrEqual(runs[0]!.end);
  });

  it.skipIf(skip)('a worker killed mid-run leaks no slot: after the sweeper, reservations match the active operations', async () => {
    deps.registry.register({ ...deps.registry.get('test.noop'), type: 'test.solo', capacityRoute: 'solo', maxAttempts: 2 });
    const alice = owner('alice');
    const { operation } = await admit(alice, 'test.solo');
    await admit(owner('bob'), 'test.solo');
    const worker = new WorkerScope(t.store);
    await claimNextOperation(worker, deps);
    expect(await heldCapacity(t.store, 'route:solo')).toBe(1);
    t.clock.advance(deps.policy.leaseMs + 1);
    await sweep();
    expect(await heldCapacity(t.store, 'route:solo')).toBe(0);
    await expectCapacityMatchesActive(t.store);
    await claimNextOperation(worker, deps);
    t.clock.advance(deps.policy.leaseMs + 1);
    await sweep();
    await claimNextOperation(worker, deps);
    t.clock.advance(deps.policy.leaseMs + 1);
    await sweep();
    expect((await getOperation(alice, operation.id)).status).toBe('failed');
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('pools whose slot rows vanished after this process saw them are re-created on the "full" path, never answered 429', async () => {
    const alice = owner('alice');
    await admit(alice); // this process now knows both pools exist and skips looking them up
    await t.store.db.deleteFrom('capacity_slots').execute();
    await t.store.db.deleteFrom('owner_capacity').execute();
    await t.store.db.deleteFrom('operations').execute();
    const { operation } = await admit(alice);
    expect(operation.status).toBe('queued');
    expect(await heldCapacity(t.store, 'owner:')).toBe(1);
    await admit(alice);
    // the re-created pools hold their limits: the third active operation is refused as before
    expect(await admit(alice).catch((error: unknown) => error)).toBeInstanceOf(CapacityExhaustedError);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('an owner retry after the pools\' slot rows vanished re-creates them instead of answering 429', async () => {
    const alice = owner('alice');
    const { operation } = await admit(alice);
    await cancelOperation(alice, operation.id);
    await t.store.db.deleteFrom('capacity_slots').execute();
    await t.store.db.deleteFrom('owner_capacity').execute();
    const logger = new RecordingLogger();
    expect((await retryOperation(alice, { ...deps, logger }, operation.id)).status).toBe('queued');
    expect(await heldCapacity(t.store, 'owner:')).toBe(1);
    // the re-created pool was not full: no capacity_rejected line for a retry that went through
    expect(logger.lines.map((line) => line.fields.event)).toEqual(['owner_retried']);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('the sweeper reclaims global slots leaked by a missing or terminal holder and corrects the owner counter, and reports the count', async () => {
    const alice = owner('alice');
    const gone = await admit(alice);
    const stale = await admit(alice);
    await t.store.db.deleteFrom('operations').where('id', '=', gone.operation.id).execute();
    await t.store.db.updateTable('operations').set({ status: 'failed', finished_at: t.store.timeAt() }).where('id', '=', stale.operation.id).execute();
    // Two global slots freed, one owner counter row (active 2 → 0) corrected.
    expect((await sweep()).capacityReclaimed).toBe(3);
    expect(await heldCapacity(t.store, '')).toBe(0);
    expect((await sweep()).capacityReclaimed).toBe(0);
  });

  it.skipIf(skip)('a revoked owner is refused at admission and their queued work fails closed with entitlement_revoked', async () => {
    const alice = owner('alice');
    const bob = owner('bob');
    const queued = await admit(alice, 'demo.wait', { durationMs: 0 });
    const bobs = await admit(bob, 'demo.wait', { durationMs: 0 });
    const replayBody = { taskType: 'demo.wait', subject: { type: 'doc', id: 'replayed' }, params: { durationMs: 0 } };
    const admittedBefore = await admitOperation(alice, deps, 'before-revocation', replayBody);
    await updateOwnSettings(alice, { aiEnabled: false });
    await expect(admit(alice, 'demo.wait', { durationMs: 0 })).rejects.toBeInstanceOf(NotEntitledError);
    // a replay of work admitted while entitled still answers with that operation; only new work is refused
    const replay = await admitOperation(alice, deps, 'before-revocation', replayBody);
    expect(replay).toMatchObject({ replayed: true, operation: { id: admittedBefore.operation.id } });
    await admit(alice);
    const workerDeps = { ...deps, store: t.store };
    // Until nothing is queued (the fair claim order decides which owner goes first; each wake-up claims one).
    const queuedLeft = async () => (await t.store.db.selectFrom('operations').select('id').where('status', '=', 'queued').execute()).length;
    for (let i = 0; i < 10 && (await queuedLeft()) > 0; i++) await processWakeup(workerDeps, () => 60_000);
    expect((await getOperation(alice, admittedBefore.operation.id)).failure_code).toBe('entitlement_revoked');
    expect(await getOperation(alice, queued.operation.id)).toMatchObject({ status: 'failed', failure_code: 'entitlement_revoked' });
    expect((await getOperation(bob, bobs.operation.id)).status).toBe('succeeded');
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('the privacy mode is snapshotted at admission and later settings changes do not touch it', async () => {
    const alice = owner('alice');
    await updateOwnSettings(alice, { privacyMode: 'external_allowed' });
    const before = await admit(alice);
    await updateOwnSettings(alice, { privacyMode: 'local_only' });
    const after = await admit(alice);
    expect((await getOperation(alice, before.operation.id)).privacy_mode).toBe('external_allowed');
    expect((await getOperation(alice, after.operation.id)).privacy_mode).toBe('local_only');
    // an owner retry never widens privacy: the stricter of the snapshot and the current mode
    await cancelOperation(alice, before.operation.id);
    expect((await retryOperation(alice, deps, before.operation.id)).privacy_mode).toBe('local_only');
  });
});
