import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { acknowledgeCancel } from '../../lib/operations/lease/lease-operations.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { getOperationDetailForOperator } from '../../lib/operations/operator/operator-operation-detail.js';
import { cancelAsOperator, toOperatorView } from '../../lib/operations/operator/operator-operations.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { toOperationDto } from '../../lib/operations/owner/operation-dto.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { operatorActor } from '../../lib/owners/actor.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('who asked for a cancel is recorded with it, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  const deps = testDeps();
  let t: TestDatabase;
  let owner: OwnerScope;
  let worker: WorkerScope;
  let keySeq = 0;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    owner = new OwnerScope(t.store, 'user-a');
    worker = new WorkerScope(t.store);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['operation_notifications', 'operations', 'operation_events'] as const) await t.store.db.deleteFrom(table).execute();
    t.clock.offsetMs = 0;
  });

  const admit = async () => (await admitOperation(owner, deps, `key-${++keySeq}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${keySeq}` }, params: {} })).operation.id;
  const claim = async () => {
    const c = await claimNextOperation(worker, deps);
    if (!c) throw new Error('expected a claim');
    return c;
  };
  const cancellers = async (id: string) =>
    (await t.store.db.selectFrom('operation_events').select(['to_status', 'cancelled_by']).where('operation_id', '=', id).orderBy('seq').execute()).map(
      (e) => [e.to_status, e.cancelled_by],
    );
  const requestedBy = async (id: string) =>
    (await t.store.db.selectFrom('operations').select('cancel_requested_by').where('id', '=', id).executeTakeFirstOrThrow()).cancel_requested_by;

  it.skipIf(skip)("the owner's cancel of a waiting operation is the owner's, on the row and on its cancelled event", async () => {
    const id = await admit();
    const row = await cancelOperation(owner, id);
    expect(row.status).toBe('cancelled');
    expect(toOperatorView(row).cancelRequestedBy).toBe('owner');
    expect(await cancellers(id)).toEqual([
      ['queued', null],
      ['cancelled', 'owner'],
    ]);
  });

  it.skipIf(skip)("an operator's cancel of a running operation names the operator; a later owner cancel does not replace it; the worker's acknowledgement carries it", async () => {
    const id = await admit();
    const lease = await claim();
    const requested = await cancelAsOperator(t.store, id, operatorActor('ops-olivia'));
    expect(requested).toMatchObject({ status: 'running', cancel_requested_by: 'operator:ops-olivia' });
    const again = await cancelOperation(owner, id);
    expect(again.cancel_requested_by).toBe('operator:ops-olivia');
    expect(again.cancel_requested_at).toBe(requested.cancel_requested_at);
    await acknowledgeCancel(enterOwnerScope(worker, lease), lease);
    const detail = await getOperationDetailForOperator(t.store, id);
    expect(detail.operation).toMatchObject({ status: 'cancelled', cancelRequestedBy: 'operator:ops-olivia' });
    expect(detail.timeline.map((e) => [e.kind, e.cancelledBy])).toEqual([
      ['admitted', null],
      ['claimed', null],
      ['cancelled', 'operator:ops-olivia'],
    ]);
  });

  it.skipIf(skip)('the sweeper cancelling an expired lease whose cancel was requested records the requester', async () => {
    const id = await admit();
    await claim();
    await cancelAsOperator(t.store, id, operatorActor('ops-rita'));
    t.clock.advance(deps.policy.leaseMs + 1_000);
    const sweep = await runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
    expect(sweep).toMatchObject({ leasesCancelled: 1 });
    expect((await cancellers(id)).at(-1)).toEqual(['cancelled', 'operator:ops-rita']);
  });

  it.skipIf(skip)("an owner retry clears the operation's canceller; each cycle's cancelled event keeps its own", async () => {
    const id = await admit();
    await cancelAsOperator(t.store, id, operatorActor('ops-olivia'));
    const retried = await retryOperation(owner, deps, id);
    expect(retried).toMatchObject({ status: 'queued', cancel_requested_at: null, cancel_requested_by: null });
    await cancelOperation(owner, id);
    expect(await requestedBy(id)).toBe('owner');
    expect(await cancellers(id)).toEqual([
      ['queued', null],
      ['cancelled', 'operator:ops-olivia'],
      ['queued', null],
      ['cancelled', 'owner'],
    ]);
  });

  it.skipIf(skip)('of an owner and an operator cancelling one running operation at the same moment, exactly one is recorded and both answers name it', async () => {
    for (let round = 0; round < 10; round++) {
      const id = await admit();
      const lease = await claim();
      const answers = await Promise.all([cancelOperation(owner, id), cancelAsOperator(t.store, id, operatorActor('ops-olivia'))]);
      const recorded = await requestedBy(id);
      expect(['owner', 'operator:ops-olivia']).toContain(recorded);
      expect(answers.map((a) => a.cancel_requested_by)).toEqual([recorded, recorded]);
      await acknowledgeCancel(enterOwnerScope(worker, lease), lease);
    }
  });

  it.skipIf(skip)("the owner's own view of an operation never names who cancelled it", async () => {
    const id = await admit();
    const row = await cancelAsOperator(t.store, id, operatorActor('ops-olivia'));
    const dto = toOperationDto(row);
    expect(dto).not.toHaveProperty('cancelRequestedBy');
    expect(JSON.stringify(dto)).not.toContain('ops-olivia');
  });

  it.skipIf(skip)('an actor that is empty, over 128 characters, or carries control or format characters is refused before anything is written', async () => {
    const id = await admit();
    await expect(cancelAsOperator(t.store, id, '')).rejects.toBeInstanceOf(TypeError);
    await expect(cancelAsOperator(t.store, id, 'x'.repeat(129))).rejects.toBeInstanceOf(TypeError);
    await expect(cancelAsOperator(t.store, id, '\ud800')).rejects.toBeInstanceOf(TypeError);
    // A newline would forge a row of `durable-ops show`; ESC a terminal escape; U+202E a right-to-left look-alike.
    await expect(cancelAsOperator(t.store, id, 'operator:x\nstatus  succeeded')).rejects.toBeInstanceOf(TypeError);
    await expect(cancelOperation(owner, id, undefined, 'cli:\x1b]0;title\x07@host')).rejects.toBeInstanceOf(TypeError);
    await expect(cancelAsOperator(t.store, id, 'operator:\u202Eeilo')).rejects.toBeInstanceOf(TypeError);
    expect(await t.store.db.selectFrom('operations').select(['status', 'cancel_requested_by']).where('id', '=', id).executeTakeFirstOrThrow()).toEqual({
      status: 'queued',
      cancel_requested_by: null,
    });
  });
});
