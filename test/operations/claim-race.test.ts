import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

const OPERATIONS = 2_000;
const CLAIMERS = 16;

describe.skipIf(!hasMariadb())('claim race on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb', { poolSize: CLAIMERS + 4 });
  });
  afterAll(async () => t?.drop());

  it(`${CLAIMERS} concurrent claimers over ${OPERATIONS} queued operations: each claimed exactly once, all succeed, one notification each`, async () => {
    const deps = testDeps();
    const owners = Array.from({ length: 20 }, (_, i) => new OwnerScope(t.store, `owner-${i}`));
    for (let start = 0; start < OPERATIONS; start += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => {
          const i = start + j;
          return admitOperation(owners[i % owners.length] as OwnerScope, deps, `k-${i}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${i}` } });
        }),
      );
    }
    const worker = new WorkerScope(t.store);
    const claimedBy = new Map<string, number>();
    const claimer = async () => {
      for (;;) {
        const claim = await claimNextOperation(worker, deps);
        if (!claim) return;
        claimedBy.set(claim.operationId, (claimedBy.get(claim.operationId) ?? 0) + 1);
        expect(claim.attempt).toBe(1);
        await completeOperation(enterOwnerScope(worker, claim), claim);
      }
    };
    await Promise.all(Array.from({ length: CLAIMERS }, () => claimer()));

    expect(claimedBy.size).toBe(OPERATIONS);
    expect([...claimedBy.values()].every((count) => count === 1)).toBe(true);
    const byStatus = await t.store.db.selectFrom('operations').select(['status', t.store.db.fn.countAll<number>().as('n')]).groupBy('status').execute();
    expect(byStatus.map((r) => [r.status, Number(r.n)])).toEqual([['succeeded', OPERATIONS]]);
    const attempts = await t.store.db.selectFrom('operations').select('attempt').distinct().execute();
    expect(attempts.map((r) => r.attempt)).toEqual([1]);
    const perOperation = await t.store.db
      .selectFrom('operation_notifications')
      .select(['operation_id', t.store.db.fn.countAll<number>().as('n')])
      .groupBy('operation_id')
      .execute();
    expect(perOperation).toHaveLength(OPERATIONS);
    expect(perOperation.every((r) => Number(r.n) === 1)).toBe(true);
  }, 180_000); // a bound, not a performance claim: 2,000 full lifecycles on a shared 2-core machine
});
