import { beforeEach, describe, expect, it } from 'vitest';
import { InvalidTransitionError, LeaseLostError, OperationNotFoundError, RetryLimitReachedError, ScopeViolationError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { acknowledgeCancel, completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { heartbeat } from '../../lib/operations/lease/heartbeat.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation, listNotifications } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';

// A conformance suite: the same cases for the stored procedures and the in-process statements (docs/design.md §9).
describe.each(IMPLEMENTATIONS)('operation lifecycle: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines }, { tables: ['operation_notifications', 'operations', 'capacity_slots', 'owner_capacity', 'owner_turns'] });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let worker: WorkerScope;
  let keySeq = 0;

  beforeEach(async () => {
    if (skip) return;
    deps = testDeps();
    owner = new OwnerScope(db.store, 'user-a');
    worker = new WorkerScope(db.store);
  });

  const admit = (params: Record<string, unknown> = {}, scope = owner) =>
    admitOperation(scope, deps, `key-${++keySeq}`, { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params });
  const claim = async () => {
    const c = await claimNextOperation(worker, deps);
    if (!c) throw new Error('expected a claim');
    return c;
  };
  const sweep = () => runSweepOnce({ store: db.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
  const notificationsOf = async (id: string) =>
    db.store.db.selectFrom('operation_notifications').selectAll().where('operation_id', '=', id).execute();
  const statusOf = async (id: string) => (await getOperation(owner, id)).status;

  it.skipIf(skip)('claim → heartbeat → complete ends succeeded with exactly one notification', async () => {
    const { operation } = await admit();
    const c = await claim();
    expect(c).toMatchObject({ operationId: operation.id, ownerUserId: 'user-a', attempt: 1, maxAttempts: 3 });
    expect(c.leaseToken).toMatch(/^[0-9a-f]{64}$/);
    expect(await statusOf(operation.id)).toBe('running');
    const scope = enterOwnerScope(worker, c);
    const ack = await heartbeat(scope, c, { percent: 40, stage: 'halfway' });
    expect(ack.cancelRequested).toBe(false);
    // the lease the database just set, as it measures it: the 30 s lease less the time between the two statements
    expect(ack.leaseRemainingMs).toBeGreaterThan(25_000);
    expect(ack.leaseRemainingMs).toBeLessThanOrEqual(30_000);
    expect((await getOperation(owner, operation.id)).progress_percent).toBe(40);
    await completeOperation(scope, c);
    const done = await getOperation(owner, operation.id);
    expect(done).toMatchObject({ status: 'succeeded', lease_token: null, lease_expires_at: null, progress_percent: 100 });
    expect(await notificationsOf(operation.id)).toHaveLength(1);
    expect(await claimNextOperation(worker, deps)).toBeNull();
  });

  it.skipIf(skip)('claiming from an owner scope and completing from the neutral scope are refused at runtime', async () => {
    await admit();
    // @ts-expect-error an owner scope is not a worker scope: the types refuse it, the runtime check too
    await expect(claimNextOperation(owner, deps)).rejects.toBeInstanceOf(ScopeViolationError);
    const c = await claim();
    // @ts-expect-error the neutral worker scope cannot complete
    await expect(completeOperation(worker, c)).rejects.toBeInstanceOf(ScopeViolationError);
    // a forged duck-typed scope is refused as well
    const forged = { store: db.store, ownerUserId: 'user-a' } as unknown as OwnerScope;
    await expect(completeOperation(forged, c)).rejects.toBeInstanceOf(ScopeViolationError);
    // another owner's scope cannot use the lease
    await expect(completeOperation(new OwnerScope(db.store, 'user-b'), c)).rejects.toBeInstanceOf(ScopeViolationError);
    expect(await statusOf(c.operationId)).toBe('running');
  });

  it.skipIf(skip)('an expired lease is retried with a new token and every write with the old token changes nothing', async () => {
    const { operation } = await admit();
    const first = await claim();
    const scope = enterOwnerScope(worker, first);
    db.t.clock.advance(deps.policy.leaseMs + 1);
    // expired on the database clock: the holder cannot keep it, even before the sweeper runs
    await expect(heartbeat(scope, first)).rejects.toBeInstanceOf(LeaseLostError);
    const counts = await sweep();
    expect(counts).toMatchObject({ leasesRetried: 1, leasesFailed: 0, wakeupsSent: 1 });
    expect(await statusOf(operation.id)).toBe('waiting_for_retry');
    const second = await claim();
    expect(second.attempt).toBe(2);
    expect(second.leaseToken).not.toBe(first.leaseToken);
    const before = await getOperation(owner, operation.id);
    const stale: ClaimedOperation = { ...second, leaseToken: first.leaseToken };
    await expect(heartbeat(scope, stale, { percent: 99 })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(completeOperation(scope, stale)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(failOperation(scope, stale, { kind: 'permanent', message: 'x' }, 0, 0)).rejects.toBeInstanceOf(LeaseLostError);
    await cancelOperation(owner, operation.id);
    await expect(acknowledgeCancel(scope, stale)).rejects.toBeInstanceOf(LeaseLostError);
    const after = await getOperation(owner, operation.id);
    expect({ ...after, cancel_requested_at: null, cancel_requested_by: null, updated_at: null }).toEqual({ ...before, cancel_requested_at: null, cancel_requested_by: null, updated_at: null });
    expect(await notificationsOf(operation.id)).toHaveLength(0);
  });

  it.skipIf(skip)('lease expiry on the final attempt fails with lease_expired; with cancel requested it cancels', async () => {
    const { operation } = await admit();
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect((await claim()).attempt).toBe(attempt);
      db.t.clock.advance(deps.policy.leaseMs + 1);
      await sweep();
    }
    const failed = await getOperation(owner, operation.id);
    expect(failed).toMatchObject({ status: 'failed', failure_code: 'lease_expired', lease_token: null });
    expect(await notificationsOf(operation.id)).toHaveLength(1);

    const { operation: other } = await admit();
    await claim();
    const running = await cancelOperation(owner, other.id);
    expect(running.status).toBe('running');
    expect(running.cancel_requested_at).not.toBeNull();
    db.t.clock.advance(deps.policy.leaseMs + 1);
    expect(await sweep()).toMatchObject({ leasesCancelled: 1 });
    expect(await statusOf(other.id)).toBe('cancelled');
    expect(await notificationsOf(other.id)).toHaveLength(1);
  });

  it.skipIf(skip)('a lease that expires with a cancel requested ends cancelled with no failure left over from an earlier attempt', async () => {
    const { operation } = await admit();
    const first = await claim();
    await failOperation(enterOwnerScope(worker, first), first, { kind: 'retryable', message: 'attempt 1 failed' }, 0, 60_000);
    await claim();
    await cancelOperation(owner, operation.id);
    db.t.clock.advance(deps.policy.leaseMs + 1);
    expect(await sweep()).toMatchObject({ leasesCancelled: 1 });
    // As every other way to cancelled: the owner's cancel, not a failure, ended it.
    expect(await db.store.db.selectFrom('operations').select(['status', 'failure_code', 'failure_message']).where('id', '=', operation.id).executeTakeFirst()).toEqual({
      status: 'cancelled',
      failure_code: null,
      failure_message: null,
    });
  });

  it.skipIf(skip)('a queued operation past its deadline is never claimed and fails with deadline_exceeded', async () => {
    const { operation } = await admit();
    db.t.clock.advance(deps.policy.deadlineMs + 1);
    expect(await claimNextOperation(worker, deps)).toBeNull();
    expect(await sweep()).toMatchObject({ deadlinesFailed: 1 });
    expect(await getOperation(owner, operation.id)).toMatchObject({ status: 'failed', failure_code: 'deadline_exceeded' });
    expect(await notificationsOf(operation.id)).toHaveLength(1);
  });

  it.skipIf(skip)('cancel: queued cancels at once, running is cooperative via heartbeat, succeeded is refused', async () => {
    const { operation: queued } = await admit();
    expect((await cancelOperation(owner, queued.id)).status).toBe('cancelled');
    expect((await cancelOperation(owner, queued.id)).status).toBe('cancelled');
    expect(await notificationsOf(queued.id)).toHaveLength(1);

    const { operation: running } = await admit();
    const c = await claim();
    const scope = enterOwnerScope(worker, c);
    await expect(acknowledgeCancel(scope, c)).rejects.toBeInstanceOf(LeaseLostError);
    await cancelOperation(owner, running.id);
    expect(await heartbeat(scope, c)).toMatchObject({ cancelRequested: true });
    await acknowledgeCancel(scope, c);
    expect(await statusOf(running.id)).toBe('cancelled');
    expect(await notificationsOf(running.id)).toHaveLength(1);

    const { operation: done } = await admit();
    const d = await claim();
    await completeOperation(enterOwnerScope(worker, d), d);
    await expect(cancelOperation(owner, done.id)).rejects.toBeInstanceOf(InvalidTransitionError);
  });

  it.skipIf(skip)('retryable failures back off, then exhaust to retries_exhausted; permanent fails at once', async () => {
    const { operation } = await admit();
    for (let attempt = 1; attempt <= 2; attempt++) {
      const c = await claim();
      const outcome = await failOperation(enterOwnerScope(worker, c), c, { kind: 'retryable', message: 'flaky' }, 5_000, 65_000);
      expect(outcome).toEqual({ status: 'waiting_for_retry', retryInMs: 5_000 });
      expect(await claimNextOperation(worker, deps)).toBeNull();
      db.t.clock.advance(5_001);
    }
    const last = await claim();
    expect(last.attempt).toBe(3);
    expect(await failOperation(enterOwnerScope(worker, last), last, { kind: 'retryable', message: 'flaky' }, 5_000, 0)).toEqual({ status: 'failed', failureCode: 'retries_exhausted' });
    expect(await getOperation(owner, operation.id)).toMatchObject({ status: 'failed', failure_code: 'retries_exhausted' });

    const { operation: permanent } = await admit();
    const p = await claim();
    await failOperation(enterOwnerScope(worker, p), p, { kind: 'permanent', message: 'bad input' }, 5_000, 0);
    expect(await getOperation(owner, permanent.id)).toMatchObject({ status: 'failed', failure_code: 'permanent_error', attempt: 1 });
    expect(await notificationsOf(permanent.id)).toHaveLength(1);
  });

  it.skipIf(skip)('a failure after the owner asked to cancel ends cancelled, not retried or failed', async () => {
    for (const kind of ['retryable', 'timeout', 'permanent'] as const) {
      const { operation } = await admit();
      const c = await claim();
      await cancelOperation(owner, operation.id);
      expect(await failOperation(enterOwnerScope(worker, c), c, { kind, message: 'x' }, 5_000, 0)).toEqual({ status: 'cancelled' });
      expect(await getOperation(owner, operation.id)).toMatchObject({ status: 'cancelled', lease_token: null, failure_code: null });
      expect(await notificationsOf(operation.id)).toHaveLength(1);
    }
  });

  it.skipIf(skip)('owner retry requeues failed/cancelled with a fresh budget, refuses other states and is bounded', async () => {
    const { operation } = await admit();
    const c = await claim();
    await failOperation(enterOwnerScope(worker, c), c, { kind: 'permanent', message: 'x' }, 0, 0);
    const retried = await retryOperation(owner, deps, operation.id);
    expect(retried).toMatchObject({ status: 'queued', attempt: 0, retry_count: 1, failure_code: null, finished_at: null });
    await expect(retryOperation(owner, deps, operation.id)).rejects.toBeInstanceOf(InvalidTransitionError);
    expect((await claim()).attempt).toBe(1);
    await expect(retryOperation(owner, deps, operation.id)).rejects.toBeInstanceOf(InvalidTransitionError);

    const { operation: cancelled } = await admit();
    await cancelOperation(owner, cancelled.id);
    await retryOperation(owner, deps, cancelled.id);
    await cancelOperation(owner, cancelled.id);
    await retryOperation(owner, deps, cancelled.id);
    await cancelOperation(owner, cancelled.id);
    await expect(retryOperation(owner, deps, cancelled.id)).rejects.toBeInstanceOf(RetryLimitReachedError);
    // one notification per terminal transition: three cancels, three rows
    expect(await notificationsOf(cancelled.id)).toHaveLength(3);
    expect((await listNotifications(owner, { limit: '100' })).items.filter((n) => n.operation_id === cancelled.id)).toHaveLength(3);
  });

  it.skipIf(skip)('the sweeper re-sends wake-ups for queued rows nobody claimed, once per resend interval', async () => {
    deps.wakeups.failNext = true;
    const { operation } = await admit();
    expect(deps.wakeups.sent).toHaveLength(0);
    expect(await sweep()).toMatchObject({ wakeupsSent: 0 });
    db.t.clock.advance(deps.policy.wakeupResendMs + 1);
    expect(await sweep()).toMatchObject({ wakeupsSent: 1 });
    expect(deps.wakeups.sent.map((s) => s.message.operationId)).toEqual([operation.id]);
    expect(await sweep()).toMatchObject({ wakeupsSent: 0 });
  });

  it.skipIf(skip)('terminal operations older than the retention are purged with their notifications, and the key is free again', async () => {
    const first = await admitOperation(owner, deps, 'reused-key', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' } });
    await cancelOperation(owner, first.operation.id);
    const { operation: active } = await admit();
    db.t.clock.advance(deps.policy.retentionMs + 1);
    const counts = await sweep();
    expect(counts.purged).toBe(1);
    expect(await notificationsOf(first.operation.id)).toHaveLength(0);
    expect(await db.store.db.selectFrom('operations').select('id').where('id', '=', first.operation.id).executeTakeFirst()).toBeUndefined();
    expect(await db.store.db.selectFrom('operations').select('id').where('id', '=', active.id).executeTakeFirst()).toBeDefined();
    const again = await admitOperation(owner, deps, 'reused-key', { taskType: 'test.noop', subject: { type: 'doc', id: 'other' } });
    expect(again.replayed).toBe(false);
  });

  it.skipIf(skip)('owners whose ids differ only by case or trailing spaces are different owners', async () => {
    const body = { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' } };
    const mine = await admitOperation(owner, deps, 'same-key', body);
    for (const other of ['user-a ', 'USER-A', ' user-a']) {
      const scope = new OwnerScope(db.store, other);
      await expect(getOperation(scope, mine.operation.id)).rejects.toBeInstanceOf(OperationNotFoundError);
      const theirs = await admitOperation(scope, deps, 'same-key', body);
      expect(theirs.replayed).toBe(false);
      expect(theirs.operation.id).not.toBe(mine.operation.id);
    }
    const key = await admitOperation(owner, deps, 'SAME-KEY', body);
    expect(key.operation.id).not.toBe(mine.operation.id);
  });

  it.skipIf(skip)('claims take the highest priority first, then the oldest', async () => {
    const low = await admitOperation(owner, deps, 'p-low', { taskType: 'test.noop', subject: { type: 'doc', id: '1' } });
    const high = await admitOperation(owner, deps, 'p-high', { taskType: 'demo.wait', subject: { type: 'doc', id: '2' }, params: { durationMs: 0 } });
    await db.store.db.updateTable('operations').set({ priority: 5 }).where('id', '=', high.operation.id).execute();
    expect((await claim()).operationId).toBe(high.operation.id);
    expect((await claim()).operationId).toBe(low.operation.id);
  });
});
