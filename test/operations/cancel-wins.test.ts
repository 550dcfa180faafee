import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { failOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** Races per dialect: each is a real concurrent cancel and retryable failure of one running operation. */
const RACES = 60;

describe.each(DIALECTS)('the owner cancel wins over a concurrent failure on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let deps: ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let worker: WorkerScope;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    deps = testDeps();
    owner = new OwnerScope(t.store, 'racer');
    worker = new WorkerScope(t.store);
  });

  it.skipIf(skip)(
    'a cancel accepted while the attempt runs always ends cancelled, never waiting_for_retry, however it interleaves with the failure write',
    async () => {
      for (let race = 0; race < RACES; race++) {
        const { operation } = await admitOperation(owner, deps, `race-${race}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${race}` } });
        const claim = await claimNextOperation(worker, deps);
        if (!claim || claim.operationId !== operation.id) throw new Error('expected to claim the operation just admitted');
        const scope = enterOwnerScope(worker, claim);
        // Attempt 1 of 3 fails retryably while its owner cancels: both start at once, on separate connections.
        const [cancelled, failed] = await Promise.all([
          cancelOperation(owner, operation.id),
          failOperation(scope, claim, { kind: 'retryable', message: 'flaky' }, 60_000, 120_000),
        ]);
        // The cancel answered 200 either way (`cancelled`, or `running` with cancelRequested): it was accepted.
        expect(['cancelled', 'running']).toContain(cancelled.status);
        expect(cancelled.cancel_requested_at).not.toBeNull();
        const row = await getOperation(owner, operation.id);
        expect({ race, status: row.status, failed: failed.status }).toEqual({ race, status: 'cancelled', failed: failed.status });
        // No further attempt was spent: either the failure write saw the cancel, or it went first and the cancel then
        // found the operation waiting and ended it at once.
        expect(row.attempt).toBe(1);
      }
    },
    120_000,
  );
});
