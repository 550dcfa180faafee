import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/** A hook run right after a completion group's locking read: the test moves the database clock there. */
const hooks = vi.hoisted(() => ({ afterLock: undefined as undefined | (() => void) }));
vi.mock('../../lib/operations/lifecycle/lifecycle.repository.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../lib/operations/lifecycle/lifecycle.repository.js')>();
  return {
    ...original,
    lockLiveLeases: async (...args: Parameters<typeof original.lockLiveLeases>) => {
      const ids = await original.lockLiveLeases(...args);
      hooks.afterLock?.();
      return ids;
    },
  };
});

import { LeaseLostError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import type { Store } from '../../lib/db/store.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

// The in-process group (SQLite; MariaDB with its routines off) reads the clock once per statement, so a lease can
// lapse between its lock and its update; `complete_operations_v2` decides both with one "now" and cannot, so the
// routine's case is a group whose leases lapsed before it ran.
describe.each(DIALECTS)('a completion group whose leases lapse between its lock and its update, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    store = { ...t.store, caps: { ...t.store.caps, serverRoutines: false } };
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('every completion gets its own LeaseLostError and nothing is written', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(store, 'lapse');
    await admitOperation(owner, deps, 'lapse-1', { taskType: 'test.noop', subject: { type: 'doc', id: '1' } });
    await admitOperation(owner, deps, 'lapse-2', { taskType: 'test.noop', subject: { type: 'doc', id: '2' } });
    const worker = new WorkerScope(store);
    const first = await claimNextOperation(worker, deps);
    const second = await claimNextOperation(worker, deps);
    if (!first || !second) throw new Error('expected two claims');
    // The database clock passes both leases' end right after the group locked them (the 30 s test lease).
    hooks.afterLock = () => {
      t.clock.offsetMs += 31_000;
      hooks.afterLock = undefined;
    };
    const results = await Promise.allSettled([completeOperation(enterOwnerScope(worker, first), first), completeOperation(enterOwnerScope(worker, second), second)]);
    expect(results.map((r) => (r.status === 'rejected' ? r.reason : r.status))).toEqual([expect.any(LeaseLostError), expect.any(LeaseLostError)]);
    const rows = await t.store.db.selectFrom('operations').select('status').execute();
    expect(rows.map((row) => row.status)).toEqual(['running', 'running']);
    expect(await t.store.db.selectFrom('operation_notifications').selectAll().execute()).toEqual([]);
  });
});

describe.skipIf(!hasMariadb())('a completion group whose leases lapsed before it ran, on mariadb (complete_operations_v2)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('every completion gets its own LeaseLostError and nothing is written', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'lapse');
    for (const n of [1, 2, 3]) await admitOperation(owner, deps, `lapsed-${n}`, { taskType: 'test.noop', subject: { type: 'doc', id: `${n}` } });
    const worker = new WorkerScope(t.store);
    const claims = [await claimNextOperation(worker, deps), await claimNextOperation(worker, deps), await claimNextOperation(worker, deps)];
    const live = claims.pop();
    if (!live || claims.some((claim) => !claim)) throw new Error('expected three claims');
    await t.store.db.updateTable('operations').set({ lease_expires_at: t.store.timeAt(-1) }).where('id', 'in', claims.map((c) => c?.operationId ?? '')).execute();
    const results = await Promise.allSettled([...claims, live].map((claim) => completeOperation(enterOwnerScope(worker, claim!), claim!)));
    expect(results.map((r) => (r.status === 'rejected' ? r.reason : r.status))).toEqual([expect.any(LeaseLostError), expect.any(LeaseLostError), 'fulfilled']);
    const rows = await t.store.db.selectFrom('operations').select(['id', 'status']).execute();
    expect(rows.filter((row) => row.status === 'succeeded').map((row) => row.id)).toEqual([live.operationId]);
    expect((await t.store.db.selectFrom('operation_notifications').select('operation_id').execute()).map((n) => n.operation_id)).toEqual([live.operationId]);
  });
});
