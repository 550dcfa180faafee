import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChaosSchema, insertEffect } from '../../chaos/chaos-schema.js';
import { readHistory, type AdmittedRecord } from '../../chaos/history.js';
import { checkHistory, leaseSpans } from '../../chaos/invariants.js';
import { LeaseLostError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** The chaos harness records on MariaDB only (its history comes from triggers on `operations`). */
describe.skipIf(!hasMariadb())('chaos history recording on mariadb', () => {
  let t: TestDatabase;
  const deps = testDeps();
  let owner: OwnerScope;
  let worker: WorkerScope;
  const admitted: AdmittedRecord[] = [];

  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    await createChaosSchema(t.store.db);
    owner = new OwnerScope(t.store, 'chaos-owner');
    worker = new WorkerScope(t.store);
  });
  afterAll(async () => t?.drop());

  /** Admits an operation, lets attempt 1 claim it, expires its lease through the sweeper and lets attempt 2 claim it. */
  async function takenOver(key: string) {
    const { operation } = await admitOperation(owner, deps, key, { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' } });
    admitted.push({ ownerUserId: 'chaos-owner', key, id: operation.id });
    const first = await claimNextOperation(worker, deps);
    t.clock.advance(deps.policy.leaseMs + 1_000);
    await runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
    t.clock.advance(deps.policy.retry.maxDelayMs);
    const second = await claimNextOperation(worker, deps);
    if (!first || !second || first.operationId !== operation.id || second.operationId !== operation.id) throw new Error('expected two claims of one operation');
    expect(second.attempt).toBe(first.attempt + 1);
    return { id: operation.id, first, second };
  }

  it('records a lease takeover; the real guard refuses the stale completion and the history checks clean', async () => {
    const { id, first, second } = await takenOver('clean-1');
    const publish = (attempt: number) => ({ publish: (tx: { db: unknown }) => insertEffect(tx.db as Kysely<any>, { operationId: id, cycle: 0, attempt, worker: 'test' }) });
    await expect(completeOperation(enterOwnerScope(worker, first), first, publish(first.attempt))).rejects.toBeInstanceOf(LeaseLostError);
    await completeOperation(enterOwnerScope(worker, second), second, publish(second.attempt));
    const history = await readHistory(t.store, admitted);
    expect(history.transitions.filter((tr) => tr.operationId === id).map((tr) => `${tr.from ?? '∅'}→${tr.to}@${tr.toAttempt}`)).toEqual([
      '∅→queued@0',
      'queued→running@1',
      'running→waiting_for_retry@1',
      'waiting_for_retry→running@2',
      'running→succeeded@2',
    ]);
    expect(history.effects).toEqual([{ operationId: id, cycle: 0, attempt: 2, worker: 'test' }]);
    expect(checkHistory(history).violations).toEqual([]);
  });

  it('records when each write ran and the lease end it replaced, so the checker knows where each lease ended', async () => {
    const { id, first, second } = await takenOver('times-1');
    await completeOperation(enterOwnerScope(worker, second), second, {
      publish: (tx) => insertEffect(tx.db as unknown as Kysely<any>, { operationId: id, cycle: 0, attempt: second.attempt, worker: 'test' }),
    });
    const history = await readHistory(t.store, admitted);
    const writes = history.transitions.filter((tr) => tr.operationId === id);
    const row = await t.store.db.selectFrom('operations').select(['updated_at']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(writes.at(-1)?.atMs).toBe(new Date(`${row.updated_at.replace(' ', 'T')}Z`).getTime());
    for (const [a, b] of writes.slice(1).map((w, i) => [writes[i]!, w] as const)) expect(b.atMs!).toBeGreaterThanOrEqual(a.atMs!);
    const [expiry, success] = [writes.find((w) => w.to === 'waiting_for_retry')!, writes.find((w) => w.to === 'succeeded')!];
    // The sweeper's expiry runs after the lease ended; the attempt's own success while it holds.
    expect(expiry.fromLeaseExpiresAtMs).toBeLessThanOrEqual(expiry.atMs!);
    expect(success.fromLeaseExpiresAtMs).toBeGreaterThan(success.atMs!);
    const operation = history.operations.find((o) => o.id === id)!;
    const spans = leaseSpans(operation, writes);
    expect(spans.get(`c0a${first.attempt}`)).toEqual([expect.objectContaining({ endMs: expiry.fromLeaseExpiresAtMs, expired: true })]);
    expect(spans.get(`c0a${second.attempt}`)).toEqual([expect.objectContaining({ endMs: success.atMs, expired: false })]);
    // A call of attempt 1 50 ms after its lease ended is caught on the recorded times; one 50 ms before is not.
    const call = (attempt: number, atMs: number) => ({ operationId: id, cycle: 0, attempt, worker: 'test', atMs });
    const lateCall = call(first.attempt, expiry.fromLeaseExpiresAtMs! + 50);
    const secondSpan = spans.get(`c0a${second.attempt}`)![0]!;
    const onTime = [call(first.attempt, expiry.fromLeaseExpiresAtMs! - 50), call(second.attempt, Math.round((secondSpan.startMs + success.atMs!) / 2))];
    const checked = (calls: ReturnType<typeof call>[]) => checkHistory({ ...history, externalCalls: calls }).violations.filter((v) => v.operationId === id);
    expect(checked(onTime)).toEqual([]);
    expect(checked([...onTime, lateCall])).toEqual([expect.objectContaining({ invariant: 'noCallAfterLeaseEnd', detail: expect.stringMatching(/the latest 50 ms after/) })]);
  });

  it('reports a completion written without the lease token (as a broken guard writes it) after the takeover', async () => {
    const { id, first } = await takenOver('broken-1');
    // The broken build's completion: guarded by status only, so the stale attempt 1 wins while attempt 2 runs.
    await t.store.db.transaction().execute(async (tx) => {
      const changed = await tx
        .updateTable('operations')
        .set({ status: 'succeeded', lease_token: null, lease_expires_at: null, finished_at: sql`NOW(3)` })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .executeTakeFirst();
      expect(Number(changed.numUpdatedRows)).toBe(1);
      await tx.insertInto('operation_notifications').values({ operation_id: id, owner_user_id: 'chaos-owner', task_type: 'test.noop', status: 'succeeded', failure_code: null, cycle: 0, created_at: sql`NOW(3)` as never }).execute();
      await sql`UPDATE capacity_slots SET operation_id = NULL, reserved_at = NULL WHERE operation_id = ${id}`.execute(tx);
      await sql`UPDATE owner_capacity SET active = active - 1, running = running - 1 WHERE owner_user_id = 'chaos-owner'`.execute(tx);
      await insertEffect(tx as unknown as Kysely<any>, { operationId: id, cycle: 0, attempt: first.attempt, worker: 'zombie' });
    });
    const violations = checkHistory(await readHistory(t.store, admitted)).violations;
    expect(violations).toEqual([{ invariant: 'noWriteAfterTakeover', operationId: id, detail: 'success committed by c0a1 while c0a2 held the lease' }]);
  });
});
