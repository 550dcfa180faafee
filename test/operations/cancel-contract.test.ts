import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** Races per dialect: each is a real concurrent owner cancel and completion of one running operation. */
const RACES = 60;

describe.each(DIALECTS)('the cancel contract on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let seq = 0;
  const deps = testDeps();

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  const running = async (owner: OwnerScope) => {
    const { operation } = await admitOperation(owner, deps, `contract-${++seq}`, { taskType: 'test.noop', subject: { type: 'doc', id: `c${seq}` } });
    const claim = await claimNextOperation(new WorkerScope(t.store), deps);
    if (!claim || claim.operationId !== operation.id) throw new Error('expected to claim the operation just admitted');
    return { operation, claim, scope: enterOwnerScope(new WorkerScope(t.store), claim) };
  };

  it.skipIf(skip)(
    'a cancel racing a completion answers 200 running + cancelRequested or 409, decided by its own statement — never a succeeded operation',
    async () => {
      const owner = new OwnerScope(t.store, 'contract-race');
      for (let race = 0; race < RACES; race++) {
        const { operation, claim, scope } = await running(owner);
        const [answer] = await Promise.all([
          cancelOperation(owner, operation.id).then(
            (row) => ({ status: row.status, cancelRequested: row.cancel_requested_at !== null }),
            (error: unknown) => (error instanceof InvalidTransitionError ? 'conflict' : Promise.reject(error)),
          ),
          completeOperation(scope, claim),
        ]);
        expect([{ status: 'running', cancelRequested: true }, 'conflict'], `race ${race}`).toContainEqual(answer);
        // A completion that commits after the cancel was accepted keeps its result: the success stands.
        expect((await getOperation(owner, operation.id)).status).toBe('succeeded');
      }
    },
    120_000,
  );

  it.skipIf(skip)('a completion after an accepted cancel stands: succeeded, cancelRequested kept, one notification', async () => {
    const owner = new OwnerScope(t.store, 'contract-stands');
    const { operation, claim, scope } = await running(owner);
    expect(await cancelOperation(owner, operation.id)).toMatchObject({ status: 'running' });
    await completeOperation(scope, claim);
    const row = await getOperation(owner, operation.id);
    expect(row.status).toBe('succeeded');
    expect(row.cancel_requested_at).not.toBeNull();
    const notes = await t.store.db.selectFrom('operation_notifications').select('status').where('operation_id', '=', operation.id).execute();
    expect(notes).toEqual([{ status: 'succeeded' }]);
  });

  it.skipIf(skip)('a queued operation answers cancelled; a succeeded one 409; a cancelled one again cancelled, unchanged', async () => {
    const owner = new OwnerScope(t.store, 'contract-shapes');
    const { operation: queued } = await admitOperation(owner, deps, `contract-${++seq}`, { taskType: 'test.noop', subject: { type: 'doc', id: 'q' } });
    const cancelled = await cancelOperation(owner, queued.id);
    expect(cancelled.status).toBe('cancelled');
    expect(await cancelOperation(owner, queued.id)).toEqual(cancelled);
    const { operation, claim, scope } = await running(owner);
    await completeOperation(scope, claim);
    await expect(cancelOperation(owner, operation.id)).rejects.toBeInstanceOf(InvalidTransitionError);
  });
});
