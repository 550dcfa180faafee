import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../lib/db/database.js';
import { openStore, type Store } from '../../lib/db/store.js';
import { CapacityExhaustedError, ForeignTransactionError, IdempotencyKeyReusedError, RateLimitedError, StoreConnectionBusyError } from '../../lib/errors.js';
import { admitOperation, type TransactionalAdmission } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { waitFor } from '../support/wait-for.js';
import { createTestDatabase, hasMariadb, implementationDatabase, IMPLEMENTATIONS, type TestDatabase } from '../support/test-store.js';

// Admission (and owner retry) inside the caller's own transaction (docs/design.md §4, "Admission inside the caller's
// transaction"), on every implementation: the MariaDB store with its routines on must take the in-process path on the
// caller's transaction too (a CALL would commit on a connection of its own, and survive the caller's rollback).

/** The application's own table, beside durable-ops' tables in the same database. */
type AppTables = {
  app_orders: { id: string; owner_user_id: string; operation_id: string | null };
};

/** Thrown inside a caller's transaction to roll it back. */
class RollBack extends Error {}

describe.each(IMPLEMENTATIONS)('admission inside the caller\'s transaction: $name', ({ dialect, routines }) => {
  // A store object of its own per case: the pools it saw complete start empty, so first admissions create them.
  const db = implementationDatabase(
    { dialect, routines },
    {
      setup: async (t) => {
        await t.store.db.schema
          .createTable('app_orders')
          .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('owner_user_id', 'varchar(128)', (c) => c.notNull())
          .addColumn('operation_id', 'varchar(64)')
          .execute();
      },
    },
  );
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let worker: WorkerScope;
  let seq = 0;

  beforeEach(async () => {
    if (skip) return;
    await app(db.store.db).deleteFrom('app_orders').execute();
    deps = testDeps({}, { perOwner: 2, global: 5 });
    owner = new OwnerScope(db.store, 'alice');
    worker = new WorkerScope(db.store);
  });

  const app = (database: Store['db'] | Transaction<Database>) => database.withTables<AppTables>();
  const body = (n: number) => ({ taskType: 'test.noop', subject: { type: 'doc', id: `d${n}` }, params: { n } });
  /** In the caller's transaction: the app's order row, then the admission of `key` for it. */
  const orderAndAdmit = async (trx: Transaction<Database>, key: string, n = ++seq): Promise<TransactionalAdmission> => {
    await app(trx).insertInto('app_orders').values({ id: `order-${key}`, owner_user_id: 'alice', operation_id: null }).execute();
    const admission = await admitOperation(owner, deps, key, body(n), { transaction: trx });
    await app(trx).updateTable('app_orders').set({ operation_id: admission.operation.id }).where('id', '=', `order-${key}`).execute();
    return admission;
  };
  const rolledBack = async (work: (trx: Transaction<Database>) => Promise<unknown>): Promise<void> => {
    await expect(
      db.store.db.transaction().execute(async (trx) => {
        await work(trx);
        throw new RollBack('the caller rolls back');
      }),
    ).rejects.toBeInstanceOf(RollBack);
  };
  const orders = () => app(db.store.db).selectFrom('app_orders').selectAll().orderBy('id').execute();
  const operations = () => db.store.db.selectFrom('operations').selectAll().orderBy('created_at').execute();
  const counters = () => db.store.db.selectFrom('owner_capacity').select(['owner_user_id', 'active', 'running']).execute();
  const sweep = () => runSweepOnce({ store: db.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
  /** Claims the next operation and completes it: the operation ran. */
  const runNext = async () => {
    const claim = await claimNextOperation(worker, deps);
    if (!claim) throw new Error('expected a claimable operation');
    await completeOperation(enterOwnerScope(worker, claim), claim);
    return claim.operationId;
  };

  it.skipIf(skip)('committed with the caller\'s rows: the order and the operation both exist, the wake-up waits for afterCommit, and it runs', async () => {
    const admission = await db.store.db.transaction().execute(async (trx) => {
      const admitted = await orderAndAdmit(trx, 'k-commit');
      expect(admitted).toMatchObject({ replayed: false, operation: { status: 'queued', owner_user_id: 'alice' } });
      if (dialect === 'mariadb') {
        // Another connection, before the commit: the row is not there for it, so a hint now would find nothing.
        expect(await claimNextOperation(worker, deps)).toBeNull();
      }
      return admitted;
    });
    expect(deps.wakeups.sent).toEqual([]);
    await admission.afterCommit();
    await admission.afterCommit();
    expect(deps.wakeups.sent.map((s) => s.message)).toEqual([{ v: 1, reason: 'admitted', operationId: admission.operation.id }]);
    expect(await orders()).toEqual([{ id: 'order-k-commit', owner_user_id: 'alice', operation_id: admission.operation.id }]);
    expect((await operations()).map((o) => o.id)).toEqual([admission.operation.id]);
    await expectCapacityMatchesActive(db.store);
    expect(await runNext()).toBe(admission.operation.id);
    expect((await getOperation(owner, admission.operation.id)).status).toBe('succeeded');
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('rolled back with the caller\'s rows: neither exists, capacity is back exactly, nothing is claimable, nothing was sent', async () => {
    const earlier = await admitOperation(owner, deps, 'k-earlier', body(0));
    const sentBefore = deps.wakeups.sent.length;
    // A new owner too: its counter row is created inside the caller's transaction, and goes with the rollback.
    const bob = new OwnerScope(db.store, 'bob');
    await rolledBack(async (trx) => {
      await orderAndAdmit(trx, 'k-rollback');
      await admitOperation(bob, deps, 'k-bob', body(1), { transaction: trx });
    });
    expect(await orders()).toEqual([]);
    expect((await operations()).map((o) => o.id)).toEqual([earlier.operation.id]);
    expect(await counters()).toEqual([{ owner_user_id: 'alice', active: 1, running: 0 }]);
    expect(await heldCapacity(db.store, 'global:')).toBe(1);
    await expectCapacityMatchesActive(db.store);
    expect(deps.wakeups.sent.length).toBe(sentBefore);
    expect(await runNext()).toBe(earlier.operation.id);
    expect(await claimNextOperation(worker, deps)).toBeNull();
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a crash between the caller\'s commit and afterCommit: the sweeper re-sends the wake-up at wake_at and it runs', async () => {
    // The caller commits and dies before `afterCommit()`.
    const admission = await db.store.db.transaction().execute((trx) => orderAndAdmit(trx, 'k-crash'));
    expect(deps.wakeups.sent).toEqual([]);
    expect(await sweep()).toMatchObject({ wakeupsSent: 0 });
    db.t.clock.advance(deps.policy.wakeupResendMs + 1);
    expect(await sweep()).toMatchObject({ wakeupsSent: 1 });
    expect(deps.wakeups.sent.map((s) => s.message.operationId)).toEqual([admission.operation.id]);
    expect(await runNext()).toBe(admission.operation.id);
    expect((await getOperation(owner, admission.operation.id)).status).toBe('succeeded');
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('capacity is held exactly at the owner limit: N commit, the next is CapacityExhaustedError and the caller\'s transaction goes on', async () => {
    // Limit 2, three admissions on one transaction at once (nothing else runs on it meanwhile): they run one after the
    // other, and the third is refused with the transaction usable — the caller links the two and commits.
    const settled = await db.store.db.transaction().execute(async (trx) => {
      for (const n of [1, 2, 3]) await app(trx).insertInto('app_orders').values({ id: `order-k-${n}`, owner_user_id: 'alice', operation_id: null }).execute();
      const results = await Promise.allSettled([1, 2, 3].map((n) => admitOperation(owner, deps, `k-${n}`, body(n), { transaction: trx })));
      for (const [i, result] of results.entries()) {
        if (result.status === 'fulfilled') await app(trx).updateTable('app_orders').set({ operation_id: result.value.operation.id }).where('id', '=', `order-k-${i + 1}`).execute();
      }
      return results;
    });
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect(settled[2]).toMatchObject({ reason: { name: CapacityExhaustedError.name, pool: 'owner' } });
    expect(await counters()).toEqual([{ owner_user_id: 'alice', active: 2, running: 0 }]);
    expect(await operations()).toHaveLength(2);
    await expectCapacityMatchesActive(db.store);
    // A later transaction: refused again; its own rows commit, and nothing of the admission is left.
    await db.store.db.transaction().execute(async (trx) => {
      await app(trx).insertInto('app_orders').values({ id: 'order-after', owner_user_id: 'alice', operation_id: null }).execute();
      await expect(admitOperation(owner, deps, 'k-4', body(4), { transaction: trx })).rejects.toMatchObject({ pool: 'owner' });
      await app(trx).updateTable('app_orders').set({ operation_id: 'none' }).where('id', '=', 'order-after').execute();
    });
    expect((await orders()).map((o) => [o.id, o.operation_id])).toEqual([
      ['order-after', 'none'],
      ['order-k-1', expect.any(String)],
      ['order-k-2', expect.any(String)],
      ['order-k-3', null],
    ]);
    expect(await operations()).toHaveLength(2);
    expect(await counters()).toEqual([{ owner_user_id: 'alice', active: 2, running: 0 }]);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a replay of the key in a second transaction answers the first operation; another request under it is 422 and the transaction goes on', async () => {
    const first = await db.store.db.transaction().execute(async (trx) => {
      const admitted = await orderAndAdmit(trx, 'k-same', 7);
      // The same key again in the same transaction: the row it has not committed yet answers.
      const again = await admitOperation(owner, deps, 'k-same', body(7), { transaction: trx });
      expect(again).toMatchObject({ replayed: true, operation: { id: admitted.operation.id } });
      return admitted;
    });
    await first.afterCommit();
    const sent = deps.wakeups.sent.length;
    await db.store.db.transaction().execute(async (trx) => {
      const replay = await admitOperation(owner, deps, 'k-same', body(7), { transaction: trx });
      expect(replay).toMatchObject({ replayed: true, operation: first.operation });
      await replay.afterCommit();
      await expect(admitOperation(owner, deps, 'k-same', body(8), { transaction: trx })).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
      await app(trx).insertInto('app_orders').values({ id: 'order-after-422', owner_user_id: 'alice', operation_id: null }).execute();
    });
    expect(deps.wakeups.sent.length).toBe(sent);
    expect((await orders()).map((o) => o.id)).toEqual(['order-after-422', 'order-k-same']);
    expect((await operations()).map((o) => o.id)).toEqual([first.operation.id]);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('owner retry in the caller\'s transaction: rolled back, the operation stays as it was; committed, it is queued again and runs', async () => {
    const { operation } = await admitOperation(owner, deps, 'k-retry', body(1));
    await cancelOperation(owner, operation.id);
    const cancelled = await getOperation(owner, operation.id);
    const sent = deps.wakeups.sent.length;
    await rolledBack(async (trx) => {
      const retried = await retryOperation(owner, deps, operation.id, { transaction: trx });
      expect(retried.operation).toMatchObject({ status: 'queued', retry_count: 1 });
    });
    expect(await getOperation(owner, operation.id)).toEqual(cancelled);
    expect(await counters()).toEqual([{ owner_user_id: 'alice', active: 0, running: 0 }]);
    await expectCapacityMatchesActive(db.store);
    expect(await claimNextOperation(worker, deps)).toBeNull();
    const retried = await db.store.db.transaction().execute((trx) => retryOperation(owner, deps, operation.id, { transaction: trx }));
    expect(deps.wakeups.sent.length).toBe(sent);
    await retried.afterCommit();
    expect(deps.wakeups.sent.slice(sent).map((s) => s.message)).toEqual([{ v: 1, reason: 'owner_retry', operationId: operation.id }]);
    expect(await getOperation(owner, operation.id)).toMatchObject({ status: 'queued', retry_count: 1 });
    await expectCapacityMatchesActive(db.store);
    expect(await runNext()).toBe(operation.id);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a transaction that is not one of the scope\'s db.store is refused with ForeignTransactionError and nothing is written', async () => {
    // `withTables` copies are the same transaction and are accepted.
    await db.store.db.transaction().execute(async (trx) => {
      await admitOperation(owner, deps, 'k-copy', body(1), { transaction: trx.withTables<AppTables>() });
    });
    // Not a transaction at all.
    await expect(admitOperation(owner, deps, 'k-db', body(2), { transaction: db.store.db as unknown as Transaction<Database> })).rejects.toBeInstanceOf(ForeignTransactionError);
    // A transaction of another kysely instance (another pool) on the same database: it would commit on its own.
    const other = openStore(db.t.url);
    try {
      await other.db.transaction().execute(async (trx) => {
        await expect(admitOperation(owner, deps, 'k-other', body(3), { transaction: trx })).rejects.toBeInstanceOf(ForeignTransactionError);
        await expect(retryOperation(owner, deps, 'x', { transaction: trx })).rejects.toBeInstanceOf(ForeignTransactionError);
      });
    } finally {
      await other.destroy();
    }
    expect((await operations()).map((o) => o.idempotency_key)).toEqual(['k-copy']);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a rolled-back admission gives its rate token back; an empty bucket is RateLimitedError with the caller\'s transaction usable', async () => {
    deps = testDeps({}, { perOwner: 2, global: 5, file: { taskTypes: { 'test.noop': { rate: { burst: 1, perSeconds: 3600 } } } } });
    await rolledBack((trx) => orderAndAdmit(trx, 'k-spent-then-back'));
    // The one token is still there: the rollback took the spend with it.
    const admission = await db.store.db.transaction().execute(async (trx) => {
      const admitted = await orderAndAdmit(trx, 'k-token');
      await expect(admitOperation(owner, deps, 'k-empty', body(99), { transaction: trx })).rejects.toBeInstanceOf(RateLimitedError);
      await app(trx).insertInto('app_orders').values({ id: 'order-after-429', owner_user_id: 'alice', operation_id: null }).execute();
      return admitted;
    });
    expect((await orders()).map((o) => o.id)).toEqual(['order-after-429', 'order-k-token']);
    expect((await operations()).map((o) => o.id)).toEqual([admission.operation.id]);
    await expectCapacityMatchesActive(db.store);
  });

  it.skipIf(skip)('a failed admission leaves the caller\'s savepoints and earlier writes as they were', async () => {
    await db.store.db.transaction().execute(async (trx) => {
      await sql`SAVEPOINT caller_own`.execute(trx);
      await app(trx).insertInto('app_orders').values({ id: 'order-kept', owner_user_id: 'alice', operation_id: null }).execute();
      await admitOperation(owner, deps, 'k-a', body(1), { transaction: trx });
      await admitOperation(owner, deps, 'k-b', body(2), { transaction: trx });
      await expect(admitOperation(owner, deps, 'k-c', body(3), { transaction: trx })).rejects.toBeInstanceOf(CapacityExhaustedError);
      // The caller's own savepoint is still there, and rolls back its own work and both admissions.
      await sql`ROLLBACK TO SAVEPOINT caller_own`.execute(trx);
      await sql`RELEASE SAVEPOINT caller_own`.execute(trx);
    });
    expect(await orders()).toEqual([]);
    expect(await operations()).toEqual([]);
    expect(await heldCapacity(db.store, '')).toBe(0);
    await expectCapacityMatchesActive(db.store);
  });
});

describe.skipIf(!hasMariadb())('admission inside a caller\'s REPEATABLE READ transaction, on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('a concurrent admission under the same key answers the committed operation, though its snapshot predates it', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'rita');
    const body = { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} };
    await admitOperation(owner, deps, 'warm-up', { ...body, subject: { type: 'doc', id: 'd0' } });
    const first = await t.store.db.startTransaction().execute();
    const admitted = await admitOperation(owner, deps, 'same-key', body, { transaction: first });
    const second = await t.store.db.startTransaction().setIsolationLevel('repeatable read').execute();
    // The application's own read first: the snapshot of `second` is taken now, before `first` commits.
    await second.selectFrom('operations').select('id').limit(1).execute();
    const replay = admitOperation(owner, deps, 'same-key', body, { transaction: second });
    // Its insert waits on the uncommitted row's unique key (it cannot end before `first` does); once sent, `first` commits.
    await waitFor(async () => {
      const { rows } = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ${'insert into `operations`%'}`.execute(t.store.db);
      return Number(rows[0]?.n) > 0 || undefined;
    }, { what: 'the second admission waiting on the first one\'s key' });
    await first.commit().execute();
    const answer = await replay;
    await second.commit().execute();
    expect({ replayed: answer.replayed, id: answer.operation.id }).toEqual({ replayed: true, id: admitted.operation.id });
    expect(await t.store.db.selectFrom('operations').select('id').where('idempotency_key', '=', 'same-key').execute()).toHaveLength(1);
  });
});

describe('a call on a SQLite store from inside a transaction on it', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('sqlite');
  });
  afterAll(async () => t?.drop());

  it('fails with StoreConnectionBusyError instead of waiting for good, and the store works once the transaction ends', async () => {
    const store = openStore(t.url, { sqliteConnectionWaitMs: 300 });
    try {
      const owner = new OwnerScope(store, 'sam');
      const admitted = await store.db.transaction().execute(async (trx) => {
        const admission = await admitOperation(owner, testDeps(), 'k-busy', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} }, { transaction: trx });
        // Outside the transaction: it waits for the connection this transaction holds.
        await expect(getOperation(owner, admission.operation.id)).rejects.toBeInstanceOf(StoreConnectionBusyError);
        return admission;
      });
      expect((await getOperation(owner, admitted.operation.id)).status).toBe('queued');
    } finally {
      await store.destroy();
    }
  });
});
