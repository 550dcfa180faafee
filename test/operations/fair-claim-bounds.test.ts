import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOwnerCapacityRows } from '../../lib/capacity/owner-capacity.repository.js';
import type { Store } from '../../lib/db/store.js';
import { claimNextOperation } from '../../lib/operations/lease/claim-operation.js';
import { selectReadyTurns } from '../../lib/operations/lease/owner-turns.repository.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { claimCandidateQuery, selectClaimCandidates } from '../../lib/operations/store/operation.repository.js';
import { testDeps } from '../support/fixtures.js';
import { handlerReads, inOpenTransaction, insertBacklog, locksHeldBy, readsBetween, sqlitePlans } from '../support/operation-backlog.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

// A claim reads the ready owners' turns and each chosen owner's own claim range (docs/design.md §4, fair share): what one
// owner has queued costs another owner's claim nothing — not its 10,000 queued rows, not while it is at its running
// limit — and neither do rows queued for task types the claimer does not run.

const BACKLOG = 10_000;
const HOUR = 3_600_000;
const LIMIT = 2;

/** A store whose claim transaction pauses after its `UPDATE operations` until `release()`: its locks stay held meanwhile. */
function pausingStore(store: Store): { store: Store; paused: Promise<void>; release: () => void } {
  let onPaused!: () => void;
  let release!: () => void;
  const paused = new Promise<void>((resolve) => (onPaused = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let sql = '';
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      sql = store.db.getExecutor().compileQuery(args.node, args.queryId).sql;
      return args.node;
    },
    transformResult: async (args) => {
      if (/^update `operations`/i.test(sql)) {
        onPaused();
        await gate;
      }
      return args.result;
    },
  };
  return { store: { ...store, db: store.db.withPlugin(plugin) } as Store, paused, release };
}

describe.skipIf(!hasMariadb())(`a claim for another owner behind ${BACKLOG} queued operations of one owner at its running limit, on MariaDB`, () => {
  let t: TestDatabase;
  let locks: TestDatabase;
  const deps = testDeps({}, { perOwner: 20_000, runningPerOwner: LIMIT });
  beforeAll(async () => {
    // One connection: the claim's statements and the Handler_read_* reads around it share a session.
    t = await createTestDatabase('mariadb', { poolSize: 1 });
    locks = { ...t, store: (await import('../../lib/db/store.js')).openStore(t.url, { poolSize: 3 }) };
    await ensureOwnerCapacityRows(t.store, ['hog', 'light'].map((ownerUserId) => ({ taskType: 'test.noop', ownerUserId })));
    // Older than the light owner's row and of higher priority: ahead of it in any order that ignores owners.
    await insertBacklog(t.store, BACKLOG, (i) => ({ status: 'queued', priority: 5, deadline: HOUR, available: -HOUR + i }), 'hog');
    await insertBacklog(t.store, BACKLOG, (i) => ({ status: 'queued', taskType: 'other.type', priority: 9, deadline: HOUR, available: -HOUR + i }), 'other');
    const worker = new WorkerScope(t.store);
    for (let i = 0; i < LIMIT; i++) expect((await claimNextOperation(worker, deps))?.ownerUserId).toBe('hog');
    await insertBacklog(t.store, 1, () => ({ status: 'queued', deadline: HOUR, available: -60_000 }), 'light');
  });
  afterAll(async () => {
    await locks?.store.destroy();
    await t?.drop();
  });

  it('reads O(batch) index entries and rows, and takes the other owner\'s operation', async () => {
    const before = await handlerReads(t.store.db);
    const claim = await claimNextOperation(new WorkerScope(t.store), deps);
    const reads = readsBetween(before, await handlerReads(t.store.db));
    expect(claim?.ownerUserId).toBe('light');
    // The ready turns (two), the owner plans, the hog's full running pool (its LIMIT slot rows), the light owner's
    // slot and row, the writes' lookups: a few dozen at most, never the 10,000.
    expect(reads.total, JSON.stringify(reads.counters)).toBeLessThanOrEqual(60);
    expect(reads.counters.Handler_read_next ?? 0, JSON.stringify(reads.counters)).toBeLessThanOrEqual(20);
  });

  it('holds O(batch) row locks of operations while its transaction is open: the row it takes, none of the backlog', async () => {
    await insertBacklog(t.store, 1, () => ({ status: 'queued', deadline: HOUR, available: -60_000 }), 'light');
    // Paused in the middle of its transaction, so in-process (`claim_operations_v1` holds its transaction inside one
    // CALL): the routine's locks are bounded by its reads, which the case above counts for it.
    const paused = pausingStore({ ...locks.store, caps: { ...locks.store.caps, serverRoutines: false } });
    const claiming = claimNextOperation(new WorkerScope(paused.store), deps);
    await paused.paused;
    const held = await locksHeldBy(t.store);
    paused.release();
    expect((await claiming)?.ownerUserId).toBe('light');
    expect(held.rows).toBe(1);
  });

  it('EXPLAIN: the turn read and the owner read are each one range of their index in order (no filesort)', async () => {
    const measured = await inOpenTransaction(
      t.store,
      async (tx) => {
        await selectReadyTurns(tx, 'test.noop', 32);
        return selectClaimCandidates(tx, { lane: 'L', taskType: 'test.noop', ownerUserId: 'hog' }, true, 1);
      },
      async () => {},
    );
    const [turns, owner] = measured.statements;
    expect(turns?.plan[0]?.key, turns?.sql).toBe('owner_turns_type_turn_idx');
    expect(turns?.plan[0]?.Extra ?? '', turns?.sql).not.toContain('filesort');
    expect(owner?.plan[0]?.key, owner?.sql).toBe('operations_owner_claim_idx');
    expect(owner?.plan[0]?.Extra ?? '', owner?.sql).not.toContain('filesort');
  });
});

describe('the fair claim reads on SQLite', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('sqlite');
  });
  afterAll(async () => t?.drop());

  it("searches one owner's claim range in claim order (no temporary B-tree), and the turns by the turn index", async () => {
    const plans = await sqlitePlans(t.store, async (tx) => {
      await selectClaimCandidates(tx, { lane: 'L', taskType: 'test.noop', ownerUserId: 'amy' }, false, 5);
      await selectReadyTurns(tx, 'test.noop', 32);
    });
    const [owner, turns] = plans;
    expect(owner?.plan, owner?.sql).toContain('SEARCH operations USING INDEX operations_owner_claim_idx (claim_lane=? AND task_type=? AND owner_user_id=?');
    expect(owner?.plan, owner?.sql).not.toContain('TEMP B-TREE');
    expect(turns?.plan, turns?.sql).toContain('SEARCH owner_turns USING INDEX owner_turns_type_turn_idx (task_type=?');
    expect(turns?.plan, turns?.sql).not.toContain('TEMP B-TREE');
    // the compiled MariaDB statement keeps its locking clause (SQLite's has none)
    expect(claimCandidateQuery(t.store, { lane: 'L', taskType: 'x', ownerUserId: 'y' }, true).compile().sql).toContain('FOR UPDATE SKIP LOCKED');
  });
});
