import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { heartbeat } from '../../lib/operations/lease/heartbeat.js';
import { timelineKindOf } from '../../lib/operations/operator/operation-timeline.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('operation_events, written by the triggers on operations, on %s', (dialect) => {
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
  // Each test starts with no operation (so a claim takes the test's own) and the database clock at zero offset.
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['operation_notifications', 'operations', 'operation_events'] as const) await t.store.db.deleteFrom(table).execute();
    t.clock.offsetMs = 0;
  });

  const admit = async () => (await admitOperation(owner, deps, `key-${++keySeq}`, { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} })).operation.id;
  const claim = async () => {
    const c = await claimNextOperation(worker, deps);
    if (!c) throw new Error('expected a claim');
    return c;
  };
  const sweep = () => runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
  const eventsOf = (id: string) =>
    t.store.db.selectFrom('operation_events').select(['from_status', 'to_status', 'attempt', 'cycle', 'failure_code', 'at']).where('operation_id', '=', id).orderBy('seq').execute();
  const changes = async (id: string) => (await eventsOf(id)).map((e) => [e.from_status, e.to_status, e.attempt, e.failure_code]);

  it.skipIf(skip)('every change of status or attempt is one event, at the row’s updated_at; heartbeats and progress write none', async () => {
    const id = await admit();
    const c = await claim();
    const scope = enterOwnerScope(worker, c);
    await heartbeat(scope, c, { percent: 10 });
    await heartbeat(scope, c, { percent: 60, stage: 'half' });
    await completeOperation(scope, c);
    expect(await changes(id)).toEqual([
      [null, 'queued', 0, null],
      ['queued', 'running', 1, null],
      ['running', 'succeeded', 1, null],
    ]);
    const row = await t.store.db.selectFrom('operations').select(['created_at', 'updated_at']).where('id', '=', id).executeTakeFirstOrThrow();
    const events = await eventsOf(id);
    expect(events[0]?.at).toBe(row.created_at);
    expect(events.at(-1)?.at).toBe(row.updated_at);
  });

  it.skipIf(skip)('the sweeper’s lease expiry records lease_expired on all three paths (retry, final attempt, requested cancel); a worker’s retry does not', async () => {
    const retried = await admit();
    const final = await admit();
    const cancelled = await admit();
    const workerRetry = await admit();
    await t.store.db.updateTable('operations').set({ max_attempts: 1 }).where('id', '=', final).execute();
    const claims = [await claim(), await claim(), await claim(), await claim()];
    const byId = new Map(claims.map((c) => [c.operationId, c]));
    await cancelOperation(owner, cancelled);
    const retrying = byId.get(workerRetry)!;
    expect(await failOperation(enterOwnerScope(worker, retrying), retrying, { kind: 'retryable', message: 'flaky' }, 5_000, 60_000)).toMatchObject({ status: 'waiting_for_retry' });

    t.clock.advance(deps.policy.leaseMs + 1_000);
    expect(await sweep()).toMatchObject({ leasesRetried: 1, leasesFailed: 1, leasesCancelled: 1 });

    const last = async (id: string) => (await changes(id)).at(-1);
    expect(await last(retried)).toEqual(['running', 'waiting_for_retry', 1, 'lease_expired']);
    expect(await last(final)).toEqual(['running', 'failed', 1, 'lease_expired']);
    expect(await last(cancelled)).toEqual(['running', 'cancelled', 1, 'lease_expired']);
    expect(await last(workerRetry)).toEqual(['running', 'waiting_for_retry', 1, null]);
    for (const id of [retried, final, cancelled]) {
      const [from, to, , code] = (await last(id))!;
      expect(timelineKindOf(from as never, to as never, code as string | null)).toBe('lease_lost');
    }
    expect(timelineKindOf('running', 'waiting_for_retry', null)).toBe('retry_scheduled');
    // The row itself keeps no failure code when the lease loss only retries or cancels.
    const rows = await t.store.db.selectFrom('operations').select(['id', 'failure_code']).where('id', 'in', [retried, cancelled]).execute();
    expect(rows.map((row) => row.failure_code)).toEqual([null, null]);
  });

  it.skipIf(skip)('a change made outside the code (a manual UPDATE) is recorded as well', async () => {
    const id = await admit();
    await t.store.db.updateTable('operations').set({ status: 'cancelled', finished_at: t.store.timeAt(), updated_at: t.store.timeAt() }).where('id', '=', id).execute();
    expect(await changes(id)).toEqual([
      [null, 'queued', 0, null],
      ['queued', 'cancelled', 0, null],
    ]);
  });

  it.skipIf(skip)('retention purges an operation’s events with it, and nobody else’s', async () => {
    const old = await admit();
    const c = await claim();
    await completeOperation(enterOwnerScope(worker, c), c);
    t.clock.advance(deps.policy.retentionMs + 60_000);
    const young = await admit();
    expect(await sweep()).toMatchObject({ purged: 1 });
    expect(await eventsOf(old)).toEqual([]);
    expect(await changes(young)).toEqual([[null, 'queued', 0, null]]);
  });
});
