import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/db/store.js';
import { CapacityExhaustedError, IdempotencyKeyReusedError, NotEntitledError } from '../../lib/errors.js';
import { callAdmitOperation } from '../../lib/operations/admission/admission-procedure.repository.js';
import { admitOperation, type Admission } from '../../lib/operations/admission/admit-operation.js';
import { newTurnSeed } from '../../lib/operations/lease/owner-turns.repository.js';
import { newOperationId } from '../../lib/operations/operation-id.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan, updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { noopTask, testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, IMPLEMENTATIONS, withRoutines, type TestDatabase } from '../support/test-store.js';

// One conformance suite for the two implementations of the admission decision (docs/design.md §9): the
// `admit_operation_v1` routine (MariaDB, one round trip) and the in-process statements (SQLite, and MariaDB with
// `serverRoutines` off — the path exclusive-subject and rate-limited task types take there). Every case runs on all
// three and must come out the same.

/** A task type only the `pro` plan may use. */
const proOnlyTask = defineTask({ ...noopTask, type: 'test.pro-only', entitlement: { plans: ['pro'] } });

describe.each(IMPLEMENTATIONS)('admission conformance: $name', ({ dialect, routines }) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let store: Store;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    expect(t.store.caps.serverRoutines).toBe(dialect === 'mariadb');
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    // A store object of its own per case: the in-process path remembers pools it saw complete, per store, and every
    // case starts with no slot rows.
    store = withRoutines(t.store, routines);
    for (const table of ['operation_events', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings', 'owner_turns'] as const) await store.db.deleteFrom(table).execute();
    deps = testDeps({}, { perOwner: 2, global: 3, runningPerOwner: 1, file: { plans: { pro: { perOwner: 3, runningPerOwner: 2 } } } });
    deps.registry.register(proOnlyTask);
  });

  const owner = (id: string) => new OwnerScope(store, id);
  const body = (n: number, taskType = 'test.noop') => ({ taskType, subject: { type: 'doc', id: `d${n}` }, params: { n } });
  const admit = (scope: OwnerScope, n = ++seq, taskType = 'test.noop'): Promise<Admission> => admitOperation(scope, deps, `k-${n}`, body(n, taskType));
  const rows = () => store.db.selectFrom('operations').selectAll().orderBy('created_at').execute();
  const slotRows = async (pool: string) =>
    (await store.db.selectFrom('capacity_slots').select(['slot_no', 'operation_id']).where('pool_key', '=', pool).orderBy('slot_no').execute()).map((r) => r.operation_id);
  const counters = () => store.db.selectFrom('owner_capacity').selectAll().orderBy('task_type').orderBy('owner_user_id').execute();
  const turns = () => store.db.selectFrom('owner_turns').select(['task_type', 'owner_user_id', 'ready_at', 'work_seq']).orderBy('owner_user_id').execute();

  it.skipIf(skip)('a new admission writes the queued row, its turn, its owner\'s one counter row and one global slot, one event, and sends one wake-up', async () => {
    await updateOwnSettings(owner('alice'), { privacyMode: 'external_allowed' });
    const { operation, replayed } = await admit(owner('alice'), 1);
    expect(replayed).toBe(false);
    const [row] = await rows();
    expect(row).toEqual(operation);
    expect(row).toMatchObject({
      owner_user_id: 'alice',
      task_type: 'test.noop',
      idempotency_key: 'k-1',
      status: 'queued',
      privacy_mode: 'external_allowed',
      attempt: 0,
      retry_count: 0,
      progress_percent: 0,
      params_json: '{"n":1}',
      lease_token: null,
      max_attempts: deps.policy.maxAttempts,
    });
    expect(row?.available_at).toBe(row?.created_at);
    const deadlineMs = Date.parse(`${row?.deadline_at}Z`) - Date.parse(`${row?.created_at}Z`);
    expect(deadlineMs).toBe(deps.policy.deadlineMs);
    const wakeMs = Date.parse(`${row?.wake_at}Z`) - Date.parse(`${row?.created_at}Z`);
    expect(wakeMs).toBe(deps.policy.wakeupResendMs);
    expect((await slotRows('global:test.noop')).filter((id) => id === operation.id)).toHaveLength(1);
    // the global pool has its slot rows for its limit (3); the owner's capacity is one counter row, and no slot rows
    expect((await slotRows('global:test.noop')).length).toBe(3);
    expect(await counters()).toEqual([{ task_type: 'test.noop', owner_user_id: 'alice', active: 1, running: 0 }]);
    expect(await store.db.selectFrom('capacity_slots').select('pool_key').where('pool_key', 'not like', 'global:%').execute()).toEqual([]);
    expect(await turns()).toEqual([{ task_type: 'test.noop', owner_user_id: 'alice', ready_at: row?.available_at, work_seq: expect.any(Number) }]);
    expect(await store.db.selectFrom('operation_events').select(['operation_id', 'to_status']).execute()).toEqual([{ operation_id: operation.id, to_status: 'queued' }]);
    expect(deps.wakeups.sent.map((s) => s.message)).toEqual([{ v: 1, reason: 'admitted', operationId: operation.id }]);
  });

  it.skipIf(skip)('a second admission of the owner bumps its turn and keeps the earlier ready time', async () => {
    await admit(owner('alice'), 1);
    const [before] = await turns();
    t.clock.advance(1_000);
    await admit(owner('alice'), 2);
    const [after] = await turns();
    expect(after?.ready_at).toBe(before?.ready_at);
    expect(after?.work_seq).toBe(Number(before?.work_seq) + 1);
  });

  it.skipIf(skip)('a replay answers the same row and writes nothing; the same key with another request is 422 and writes nothing', async () => {
    const first = await admit(owner('alice'), 1);
    const sent = deps.wakeups.sent.length;
    const replay = await admitOperation(owner('alice'), deps, 'k-1', body(1));
    expect(replay).toEqual({ operation: first.operation, replayed: true });
    await expect(admitOperation(owner('alice'), deps, 'k-1', body(2))).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect(await rows()).toHaveLength(1);
    expect(await heldCapacity(store, '')).toBe(2);
    expect(deps.wakeups.sent.length).toBe(sent);
  });

  it.skipIf(skip)('an owner without the entitlement is refused with 403 and nothing written; a replay of earlier work still answers', async () => {
    await setOwnerPlan(store, 'pat', 'pro');
    const earlier = await admit(owner('pat'), 1, 'test.pro-only');
    await expect(admit(owner('fred'), 2, 'test.pro-only')).rejects.toBeInstanceOf(NotEntitledError);
    await setOwnerPlan(store, 'pat', 'free');
    await expect(admit(owner('pat'), 3, 'test.pro-only')).rejects.toBeInstanceOf(NotEntitledError);
    expect(await admitOperation(owner('pat'), deps, 'k-1', body(1, 'test.pro-only'))).toEqual({ operation: earlier.operation, replayed: true });
    // a different request under the old key is still refused as not entitled (not 422): only a true replay answers
    await expect(admitOperation(owner('pat'), deps, 'k-1', body(9, 'test.pro-only'))).rejects.toBeInstanceOf(NotEntitledError);
    await updateOwnSettings(owner('alice'), { aiEnabled: false });
    await expect(admitOperation(owner('alice'), deps, 'k-ai', { taskType: 'demo.wait', subject: { type: 'doc', id: 'x' }, params: { durationMs: 0 } })).rejects.toBeInstanceOf(NotEntitledError);
    expect(await rows()).toHaveLength(1);
    expect(await heldCapacity(store, '')).toBe(2);
  });

  it.skipIf(skip)('a full owner pool is 429 owner and a full global pool 429 global, each writing nothing; the plan sets the owner limit', async () => {
    await admit(owner('alice'));
    await admit(owner('alice'));
    const turnsBefore = await turns();
    await expect(admit(owner('alice'))).rejects.toMatchObject({ name: CapacityExhaustedError.name, pool: 'owner', retryAfterSeconds: 7 });
    expect(await turns()).toEqual(turnsBefore);
    await setOwnerPlan(store, 'pat', 'pro');
    await admit(owner('pat'));
    await expect(admit(owner('bob'))).rejects.toMatchObject({ pool: 'global' });
    expect(await rows()).toHaveLength(3);
    expect(await counters()).toEqual([
      { task_type: 'test.noop', owner_user_id: 'alice', active: 2, running: 0 },
      // A new owner refused at the global pool keeps the counter row made before the reserving transaction, at zero.
      { task_type: 'test.noop', owner_user_id: 'bob', active: 0, running: 0 },
      { task_type: 'test.noop', owner_user_id: 'pat', active: 1, running: 0 },
    ]);
    await expectCapacityMatchesActive(store);
  });

  it.skipIf(skip)('a raised limit admits at once: the global pool gets its missing slots, the owner counter its new bound', async () => {
    await admit(owner('alice'));
    await admit(owner('alice'));
    expect(await heldCapacity(store, 'owner:test.noop:alice')).toBe(2);
    deps = { ...deps, capacity: testDeps({}, { perOwner: 4, global: 5 }).capacity };
    await admit(owner('alice'));
    await admit(owner('alice'));
    await expect(admit(owner('alice'))).rejects.toMatchObject({ pool: 'owner' });
    expect((await slotRows('global:test.noop')).length).toBe(5);
    await expectCapacityMatchesActive(store);
  });

  it.skipIf(skip)('concurrent clicks with one key make one operation; every other click is its replay', async () => {
    const clicks = await Promise.all(Array.from({ length: 8 }, () => admitOperation(owner('alice'), deps, 'double-click', body(7))));
    expect(new Set(clicks.map((c) => c.operation.id)).size).toBe(1);
    expect(clicks.filter((c) => !c.replayed)).toHaveLength(1);
    expect(await rows()).toHaveLength(1);
    expect(await heldCapacity(store, '')).toBe(2);
  });

  it.skipIf(skip)('concurrent admissions of many owners never hold more than the global limit', async () => {
    deps = { ...deps, capacity: testDeps({}, { perOwner: 2, global: 5 }).capacity };
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => admit(owner(`o${i % 6}`))));
    const admitted = results.filter((r) => r.status === 'fulfilled').length;
    expect(admitted).toBe(5);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(CapacityExhaustedError);
    expect(await heldCapacity(store, 'global:')).toBe(5);
    await expectCapacityMatchesActive(store);
  });
});

describe.skipIf(!hasMariadb())('admit_operation_v2 creating the same global pool and owner rows concurrently, on mariadb', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('every concurrent first admission answers admitted: a racing creator is never taken for a duplicate key', async () => {
    const { capacity } = testDeps({}, { perOwner: 50, global: 2_000 });
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          callAdmitOperation(t.store, capacity, {
            row: {
              id: newOperationId(),
              owner_user_id: `o${round}-${i % 4}`,
              task_type: 'test.noop',
              idempotency_key: `race-${round}-${i}`,
              request_hash: 'a'.repeat(64),
              subject_type: 'doc',
              subject_id: `${i}`,
              params_json: '{}',
              priority: 0,
              max_attempts: 3,
            },
            deadlineMs: 60_000,
            wakeMs: 30_000,
            turnSeed: newTurnSeed(),
            task: {},
            // A global pool and owners' counter rows no admission has created yet: every call of the round races to create them.
            globalPool: `global:race-${round}`,
            globalLimit: 2_000,
          }),
        ),
      );
      expect(answers.map((answer) => answer.outcome).join(","), `round ${round}`).toBe(Array.from({ length: 16 }, () => "admitted").join(","));
    }
  });
});
