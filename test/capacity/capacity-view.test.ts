import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getCapacityView, MAX_OWNER_POOLS, type CapacityView } from '../../lib/capacity/capacity-view.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { expectCapacityMatchesActive } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { RecordingMetrics } from '../support/recording-observability.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('capacity view: running pools per owner and running per task type, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let deps: ReturnType<typeof testDeps>;
  let metrics: RecordingMetrics;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['operation_notifications', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings'] as const) await t.store.db.deleteFrom(table).execute();
    // Free owners may run 2 of a task type at once, pro owners 3.
    deps = testDeps({}, { runningPerOwner: 2, file: { plans: { pro: { runningPerOwner: 3 } } } });
    metrics = new RecordingMetrics();
  });

  const admit = (owner: string, taskType = 'test.noop', params: Record<string, unknown> = {}) =>
    admitOperation(new OwnerScope(t.store, owner), deps, `k-${++seq}`, { taskType, subject: { type: 'doc', id: `d${seq}` }, params });
  const worker = () => new WorkerScope(t.store);
  /** Claims until nothing is claimable (every owner at its running limit or nothing queued). */
  const claimAll = async (): Promise<ClaimedOperation[]> => {
    const claims: ClaimedOperation[] = [];
    for (;;) {
      const claim = await claimNextOperation(worker(), { ...deps, metrics });
      if (!claim) return claims;
      claims.push(claim);
    }
  };
  const complete = (claim: ClaimedOperation) => completeOperation(enterOwnerScope(worker(), claim), claim);
  const view = () => getCapacityView(t.store, deps.capacity);
  const ofKind = (capacity: CapacityView, kind: string) => capacity.pools.filter((pool) => pool.kind === kind);

  it.skipIf(skip)('lists each owner’s running pool with what it holds and the running limit of its plan, after the other kinds; totals per task type', async () => {
    await setOwnerPlan(t.store, 'bob', 'pro');
    for (let i = 0; i < 3; i++) await admit('alice');
    await admit('bob');
    await admit('bob', 'demo.wait', { durationMs: 0 });

    const claims = await claimAll();
    // alice's third is passed over: she is at her running limit of 2.
    expect(claims.map((claim) => claim.ownerUserId).sort()).toEqual(['alice', 'alice', 'bob', 'bob']);
    expect(metrics.total(MetricName.ClaimSkippedOwnerAtLimit, 'test.noop')).toBeGreaterThan(0);

    const capacity = await view();
    expect(ofKind(capacity, 'running')).toEqual([
      { poolKey: 'running:test.noop:alice', kind: 'running', slots: 2, held: 2 },
      { poolKey: 'running:demo.wait:bob', kind: 'running', slots: 3, held: 1 },
      { poolKey: 'running:test.noop:bob', kind: 'running', slots: 3, held: 1 },
    ]);
    // The existing kinds keep their place; running pools come last.
    const kinds = capacity.pools.map((pool) => pool.kind);
    expect(kinds.slice(0, kinds.indexOf('running'))).not.toContain('running');
    expect(kinds.slice(kinds.indexOf('running')).every((kind) => kind === 'running')).toBe(true);
    expect(ofKind(capacity, 'owner')).toEqual([
      { poolKey: 'owner:test.noop:alice', kind: 'owner', slots: 200, held: 3 },
      { poolKey: 'owner:demo.wait:bob', kind: 'owner', slots: 200, held: 1 },
      { poolKey: 'owner:test.noop:bob', kind: 'owner', slots: 200, held: 1 },
    ]);
    expect(capacity.runningByTaskType).toEqual([
      { taskType: 'test.noop', running: 3, owners: 2 },
      { taskType: 'demo.wait', running: 1, owners: 1 },
    ]);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('an attempt that ends gives its running slot back: a retry wait or a success; pools holding nothing are no longer listed', async () => {
    for (let i = 0; i < 3; i++) await admit('alice');
    await admit('bob');
    const [first, second, third] = await claimAll();
    expect([first, second, third].every(Boolean)).toBe(true);

    // A retryable failure: the operation stays active (admission slots kept), its running slot is given back.
    const retried = [first, second, third].find((claim) => claim!.ownerUserId === 'alice')!;
    const outcome = await failOperation(enterOwnerScope(worker(), retried), retried, { kind: 'retryable', message: 'again' }, 60_000, 60_000);
    expect(outcome.status).toBe('waiting_for_retry');
    let capacity = await view();
    expect(ofKind(capacity, 'running').find((pool) => pool.poolKey === 'running:test.noop:alice')).toMatchObject({ slots: 2, held: 1 });
    expect(ofKind(capacity, 'owner').find((pool) => pool.poolKey === 'owner:test.noop:alice')).toMatchObject({ held: 3 });

    // alice's queued third now fits under her limit.
    const next = await claimAll();
    expect(next.map((claim) => claim.ownerUserId)).toEqual(['alice']);
    for (const claim of [first, second, third, ...next]) if (claim !== retried) await complete(claim!);

    capacity = await view();
    expect(ofKind(capacity, 'running')).toEqual([]);
    expect(capacity.runningByTaskType).toEqual([]);
    // The counter rows stay (running 0): only the listing leaves them out.
    const rows = await t.store.db.selectFrom('owner_capacity').select(['owner_user_id', 'running']).orderBy('owner_user_id').execute();
    expect(rows).toEqual([{ owner_user_id: 'alice', running: 0 }, { owner_user_id: 'bob', running: 0 }]);
    // Only alice's retry wait is still active.
    expect(ofKind(capacity, 'owner')).toEqual([{ poolKey: 'owner:test.noop:alice', kind: 'owner', slots: 200, held: 1 }]);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)(`lists the ${MAX_OWNER_POOLS} running pools holding the most, most first, ties by key; the totals count every pool`, async () => {
    const rows = Array.from({ length: 60 }, (_, i) => {
      const running = i < 5 ? 2 : i < 55 ? 1 : 0;
      return { task_type: 'test.noop', owner_user_id: `zz-${String(i).padStart(2, '0')}`, active: running, running };
    });
    await t.store.db.insertInto('owner_capacity').values(rows).execute();
    const capacity = await view();
    const expected = [...Array.from({ length: 5 }, (_, i) => [i, 2]), ...Array.from({ length: 45 }, (_, i) => [i + 5, 1])].map(([i, held]) => ({
      poolKey: `running:test.noop:zz-${String(i).padStart(2, '0')}`,
      kind: 'running',
      slots: 2,
      held,
    }));
    expect(ofKind(capacity, 'running')).toEqual(expected);
    // 5 × 2 + 50 × 1 held in 55 pools: more than the 50 listed.
    expect(capacity.runningByTaskType).toEqual([{ taskType: 'test.noop', running: 60, owners: 55 }]);
  });
});
