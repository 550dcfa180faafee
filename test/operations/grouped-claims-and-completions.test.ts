import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { cancelRequestedUnderLease, completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** Claims and completions that arrive while others of the process commit share a transaction (a GroupCommit). */
describe.each(DIALECTS)('claims and completions made together on %s', (dialect) => {
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
    for (const table of ['operation_notifications', 'operation_events', 'operations', 'capacity_slots', 'owner_capacity'] as const) await t.store.db.deleteFrom(table).execute();
    deps = testDeps({}, { file: { routes: { solo: 1 } } });
    deps.registry.register({ ...deps.registry.get('test.noop'), type: 'test.solo', capacityRoute: 'solo' });
  });

  const admit = async (taskType = 'test.noop') =>
    (await admitOperation(new OwnerScope(t.store, `owner-${seq % 3}`), deps, `c-${++seq}`, { taskType, subject: { type: 'doc', id: `d${seq}` }, params: {} })).operation.id;
  const claimConcurrently = (n: number) => Promise.all(Array.from({ length: n }, () => claimNextOperation(new WorkerScope(t.store), deps)));

  /** Admits and claims `n` operations spread over three owners. */
  const claimMany = async (n: number): Promise<ClaimedOperation[]> => {
    for (let i = 0; i < n; i++) await admit();
    const worker = new WorkerScope(t.store);
    const claims: ClaimedOperation[] = [];
    for (let i = 0; i < n; i++) {
      const claim = await claimNextOperation(worker, deps);
      if (!claim) throw new Error('expected a claim');
      claims.push(claim);
    }
    return claims;
  };
  const complete = (claim: ClaimedOperation) => completeOperation(enterOwnerScope(new WorkerScope(t.store), claim), claim);
  const rowsOf = (ids: readonly string[]) =>
    t.store.db.selectFrom('operations').select(['id', 'status', 'lease_token', 'progress_percent']).where('id', 'in', ids).orderBy('id').execute();
  const notificationsPer = async (ids: readonly string[]) => {
    const rows = await t.store.db.selectFrom('operation_notifications').select('operation_id').where('operation_id', 'in', ids).execute();
    return ids.map((id) => rows.filter((row) => row.operation_id === id).length);
  };

  it.skipIf(skip)('ten concurrent claimers of eight operations: each operation claimed once, under its own lease; two find nothing', async () => {
    const admitted: string[] = [];
    for (let i = 0; i < 8; i++) admitted.push(await admit());
    const claims = await claimConcurrently(10);
    const claimed = claims.flatMap((claim) => (claim ? [claim.operationId] : []));
    // (submitted in one turn, they share transactions: which claimer gets which row depends on who locks first, never
    // the same row twice)
    expect([...claimed].sort()).toEqual([...admitted].sort());
    expect(claims.filter((claim) => claim === null)).toHaveLength(2);
    const tokens = claims.flatMap((claim) => (claim ? [claim.leaseToken] : []));
    expect(new Set(tokens).size).toBe(8);
    const rows = await t.store.db.selectFrom('operations').select(['id', 'status', 'lease_token', 'attempt']).orderBy('id').execute();
    for (const row of rows) {
      const claim = claims.find((c) => c?.operationId === row.id);
      expect(row).toMatchObject({ status: 'running', attempt: 1, lease_token: claim?.leaseToken });
    }
  });

  it.skipIf(skip)('a full route in a group sets its lanes aside: one run of the route, the other claimers take the rest', async () => {
    const solo = [await admit('test.solo'), await admit('test.solo')];
    const plain = [await admit(), await admit()];
    const claims = await claimConcurrently(4);
    const claimed = claims.flatMap((claim) => (claim ? [claim.operationId] : []));
    expect(claimed.filter((id) => solo.includes(id))).toHaveLength(1);
    expect(claimed.filter((id) => plain.includes(id)).sort()).toEqual([...plain].sort());
    expect(claims.filter((claim) => claim === null)).toHaveLength(1);
    expect(await heldCapacity(t.store, 'route:')).toBe(1);
  });

  it.skipIf(skip)('concurrent completions each succeed exactly once: one notification each, every slot released', async () => {
    const claims = await claimMany(12);
    const first = claims.slice(0, 2).map(complete);
    await nextTurn(); // the first group is on its way
    const rest = claims.slice(2).map(complete);
    await Promise.all([...first, ...rest]);
    const ids = claims.map((claim) => claim.operationId);
    expect((await rowsOf(ids)).map((row) => [row.status, row.lease_token, row.progress_percent])).toEqual(ids.map(() => ['succeeded', null, 100]));
    expect(await notificationsPer(ids)).toEqual(ids.map(() => 1));
    await expectCapacityMatchesActive(t.store);
    // the ten that arrived while the first two committed went in one statement: one database-clock instant for all ten
    const finishedAt = await t.store.db.selectFrom('operations').select('finished_at').where('id', 'in', ids.slice(2)).execute();
    expect(new Set(finishedAt.map((row) => row.finished_at)).size).toBe(1);
  });

  it.skipIf(skip)('a lost lease in a group fails only its own completion, which changes nothing; the others succeed', async () => {
    const claims = await claimMany(6);
    const lost = claims[3] as ClaimedOperation;
    const stale = { ...lost, leaseToken: 'f'.repeat(64) };
    const outcomes = await Promise.all(
      claims.map((claim) => complete(claim === lost ? stale : claim).then(() => 'ok', (error: unknown) => (error instanceof LeaseLostError ? 'lease_lost' : String(error)))),
    );
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'lease_lost', 'ok', 'ok']);
    const rows = await rowsOf([lost.operationId]);
    expect(rows[0]).toMatchObject({ status: 'running', lease_token: lost.leaseToken });
    const others = claims.filter((claim) => claim !== lost).map((claim) => claim.operationId);
    expect((await rowsOf(others)).every((row) => row.status === 'succeeded')).toBe(true);
    expect(await notificationsPer([lost.operationId, ...others])).toEqual([0, 1, 1, 1, 1, 1]);
    await expectCapacityMatchesActive(t.store);
    // the lease that was not lost still completes
    await complete(lost);
    expect((await rowsOf([lost.operationId]))[0]?.status).toBe('succeeded');
  });

  it.skipIf(skip)('pre-run rechecks read together still answer each lease on its own: live, cancel requested, or lost', async () => {
    const claims = await claimMany(6);
    for (const claim of [claims[2], claims[4]] as ClaimedOperation[]) await cancelOperation(new OwnerScope(t.store, claim.ownerUserId), claim.operationId);
    const stale = { ...(claims[5] as ClaimedOperation), leaseToken: 'f'.repeat(64) };
    const asked = [...claims.slice(0, 5), stale];
    const outcomes = await Promise.all(
      asked.map((claim) =>
        cancelRequestedUnderLease(enterOwnerScope(new WorkerScope(t.store), claim), claim).then(String, (error: unknown) => (error instanceof LeaseLostError ? 'lease_lost' : String(error))),
      ),
    );
    expect(outcomes).toEqual(['false', 'false', 'true', 'false', 'true', 'lease_lost']);
  });

  // MariaDB only: SQLite has no row locks (one writer at a time), so no row can be held by another transaction.
  it.skipIf(skip || dialect !== 'mariadb')('a completion group never waits on a row another transaction holds: that one completes alone, later', async () => {
    const claims = await claimMany(6);
    const busy = claims[3] as ClaimedOperation;
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = () => {};
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = t.store.db.transaction().execute(async (trx) => {
      await trx.selectFrom('operations').select('id').where('id', '=', busy.operationId).forUpdate().execute();
      locked();
      await released;
    });
    await lockTaken;
    // all six are submitted in one turn and go as one group, which locks its rows SKIP LOCKED and leaves the busy one
    // out, to complete alone
    const completions = claims.map((claim) => ({ claim, done: complete(claim) }));
    const busyDone = completions.find((c) => c.claim === busy)?.done;
    // every other completion commits while the row is still held (were the group waiting on it, this would hang)
    await Promise.all(completions.filter((c) => c.claim !== busy).map((c) => c.done));
    expect((await rowsOf([busy.operationId]))[0]?.status).toBe('running');
    release();
    await holder;
    await busyDone;
    expect((await rowsOf([busy.operationId]))[0]?.status).toBe('succeeded');
    expect(await notificationsPer(claims.map((claim) => claim.operationId))).toEqual(claims.map(() => 1));
  });
});
