import { beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { sql } from 'kysely';
import { inOpenTransaction } from '../support/operation-backlog.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';

// An owner's turn (docs/design.md §4, fair share) leaves the claim order when the owner's last claimable operation of
// the task type ends — in the transaction that ends it — so finished owners never queue ahead of owners with work.


/** Real concurrent rounds of "the owner's last operation completes while the owner admits the next". */
const ROUNDS = 40;

// A conformance suite: `complete_operations_v2` / `fail_attempt_v2` and the in-process `move` (docs/design.md §9).
describe.each(IMPLEMENTATIONS)('idle turns retire when the last operation ends: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;

  beforeEach(async () => {
    if (skip) return;
    deps = testDeps({}, { perOwner: 100, runningPerOwner: 100 });
  });

  const admit = async (ownerUserId: string) =>
    (await admitOperation(new OwnerScope(db.store, ownerUserId), deps, `k-${++seq}`, { taskType: 'test.noop', subject: { type: 'doc', id: `d${seq}` }, params: {} })).operation.id;
  const claim = async (ownerUserId: string) => {
    const claimed = await claimNextOperation(new WorkerScope(db.store), deps);
    expect(claimed?.ownerUserId).toBe(ownerUserId);
    return claimed!;
  };
  const turnsOf = async (ownerUserId: string) =>
    (await db.store.db.selectFrom('owner_turns').select('owner_user_id').where('owner_user_id', '=', ownerUserId).execute()).length;

  it.skipIf(skip)("completing an owner's last operation deletes its turn in the same step", async () => {
    await admit('amy');
    const claimed = await claim('amy');
    expect(await turnsOf('amy')).toBe(1);
    await completeOperation(enterOwnerScope(new WorkerScope(db.store), claimed), claimed);
    expect(await turnsOf('amy')).toBe(0);
  });

  it.skipIf(skip)('an owner with more claimable work keeps its turn, and that work is claimed next', async () => {
    await admit('amy');
    const second = await admit('amy');
    const first = await claim('amy');
    await completeOperation(enterOwnerScope(new WorkerScope(db.store), first), first);
    expect(await turnsOf('amy')).toBe(1);
    expect((await claim('amy')).operationId).toBe(second);
  });

  it.skipIf(skip)('an owner whose only other operation waits for a retry keeps its turn', async () => {
    await admit('amy');
    await admit('amy');
    const first = await claim('amy');
    const second = await claim('amy');
    const worker = new WorkerScope(db.store);
    await failOperation(enterOwnerScope(worker, second), second, { kind: 'retryable', message: 'flaky' }, 60_000, 120_000);
    await completeOperation(enterOwnerScope(worker, first), first);
    expect(await turnsOf('amy')).toBe(1);
  });

  it.skipIf(skip)("a permanent failure of the owner's last operation deletes its turn", async () => {
    await admit('amy');
    const claimed = await claim('amy');
    await failOperation(enterOwnerScope(new WorkerScope(db.store), claimed), claimed, { kind: 'permanent', message: 'broken' }, 60_000, 120_000);
    expect(await turnsOf('amy')).toBe(0);
  });

  it.skipIf(skip)("cancelling the owner's last queued operation deletes its turn", async () => {
    const id = await admit('amy');
    expect(await turnsOf('amy')).toBe(1);
    await cancelOperation(new OwnerScope(db.store, 'amy'), id);
    expect(await turnsOf('amy')).toBe(0);
  });

  // MariaDB only: SQLite has no row locks (one writer at a time), so no turn can be held by another transaction.
  it.skipIf(skip || dialect !== 'mariadb')("a completion never waits for a turn another transaction holds: the turn is left to the claims", async () => {
    await admit('amy');
    const claimed = await claim('amy');
    await inOpenTransaction(
      db.store,
      (tx) => sql`SELECT work_seq FROM owner_turns WHERE owner_user_id = 'amy' FOR UPDATE`.execute(tx.db),
      async () => {
        await completeOperation(enterOwnerScope(new WorkerScope(db.store), claimed), claimed);
        expect((await db.store.db.selectFrom('operations').select('status').where('id', '=', claimed.operationId).executeTakeFirstOrThrow()).status).toBe('succeeded');
      },
    );
    expect(await turnsOf('amy')).toBe(1);
    // The next claim finds nothing due for it and retires it.
    expect(await claimNextOperation(new WorkerScope(db.store), deps)).toBeNull();
    expect(await turnsOf('amy')).toBe(0);
  });

  it.skipIf(skip)(
    'an admission racing the completion of the owner\'s last operation always keeps a turn for the new work',
    async () => {
      const worker = new WorkerScope(db.store);
      for (let round = 0; round < ROUNDS; round++) {
        await admit('amy');
        const claimed = await claim('amy');
        // Both start at once, on separate connections: whichever commits first, the queued operation must keep a turn.
        const [, admitted] = await Promise.all([completeOperation(enterOwnerScope(worker, claimed), claimed), admit('amy')]);
        expect({ round, turns: await turnsOf('amy') }).toEqual({ round, turns: 1 });
        const next = await claim('amy');
        expect({ round, next: next.operationId }).toEqual({ round, next: admitted });
        // Nothing is left for the next round: the owner's last operation completes, and its turn goes with it.
        await completeOperation(enterOwnerScope(worker, next), next);
        expect({ round, turns: await turnsOf('amy') }).toEqual({ round, turns: 0 });
      }
    },
    120_000,
  );
});
