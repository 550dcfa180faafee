import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { failOperation, fallBackToExternal } from '../../lib/operations/lease/lease-operations.js';
import type { ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import type { OwnerScope as Scope } from '../../lib/operations/scopes.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import type { Store } from '../../lib/db/store.js';
import { createTestDatabase, hasMariadb, IMPLEMENTATIONS, withRoutines, type TestDatabase } from '../support/test-store.js';

/** Races per dialect and failure: each is a real concurrent cancel and failure write of one running operation. */
const RACES = 60;

/** The failure writes out of `running` that are not a success: each must lose to a cancel accepted meanwhile. */
const FAILURES: readonly { readonly name: string; readonly write: (scope: Scope, claim: ClaimedOperation) => Promise<unknown> }[] = [
  { name: 'a retryable failure', write: (scope, claim) => failOperation(scope, claim, { kind: 'retryable', message: 'flaky' }, 60_000, 120_000) },
  { name: 'a permanent failure', write: (scope, claim) => failOperation(scope, claim, { kind: 'permanent', message: 'broken' }, 60_000, 120_000) },
  { name: 'an external fallback', write: (scope, claim) => fallBackToExternal(scope, claim, 'local route down', 120_000) },
];

// A conformance suite: the same races for `fail_attempt_v2` and the in-process `failAttempt` (docs/design.md §9).
describe.each(IMPLEMENTATIONS)('the owner cancel wins over a concurrent failure: $name', ({ dialect, routines }) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let store: Store;
  let deps: ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let worker: WorkerScope;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    store = withRoutines(t.store, routines);
    deps = testDeps();
    owner = new OwnerScope(store, 'racer');
    worker = new WorkerScope(store);
  });

  it.skipIf(skip).each(FAILURES)(
    'a cancel accepted while the attempt runs always ends cancelled, however it interleaves with $name',
    async ({ name, write }) => {
      for (let race = 0; race < RACES; race++) {
        const key = `${name.replace(/[^a-z]+/g, '-')}-${race}`;
        const { operation } = await admitOperation(owner, deps, key, { taskType: 'test.noop', subject: { type: 'doc', id: key } });
        const claim = await claimNextOperation(worker, deps);
        if (!claim || claim.operationId !== operation.id) throw new Error('expected to claim the operation just admitted');
        const scope = enterOwnerScope(worker, claim);
        // Attempt 1 of 3 fails while its owner cancels: both start at once, on separate connections.
        const [cancelled] = await Promise.all([
          cancelOperation(owner, operation.id).catch((error: unknown) => (error instanceof InvalidTransitionError ? 'conflict' : Promise.reject(error))),
          write(scope, claim),
        ]);
        if (cancelled === 'conflict') {
          // A permanent failure that committed first ended the operation before the cancel: 409, and it stays failed.
          expect((await getOperation(owner, operation.id)).status).toBe('failed');
          continue;
        }
        // The cancel answered 200 either way (`cancelled`, or `running` with cancelRequested): it was accepted.
        expect(['cancelled', 'running']).toContain(cancelled.status);
        expect(cancelled.cancel_requested_at).not.toBeNull();
        const row = await getOperation(owner, operation.id);
        expect({ race, status: row.status }).toEqual({ race, status: 'cancelled' });
        // No further attempt was spent: either the failure write saw the cancel, or it went first and the cancel then
        // found the operation waiting and ended it at once.
        expect(row.attempt).toBe(1);
      }
    },
    120_000,
  );
});
