import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claimNextOperation, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { claimCandidateQuery, selectClaimCandidates } from '../../lib/operations/store/operation.repository.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { testDeps } from '../support/fixtures.js';
import { handlerReads, inOpenTransaction, insertBacklog, locksHeldBy, readsBetween, sqlitePlans } from '../support/operation-backlog.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

// A claim reads one range of operations_claim_type_idx (lane, task type, priority desc, available_at) per task type it
// runs, so what is queued for other task types costs it nothing (docs/design.md §3). Before, it read the lane's index
// (lane, priority desc, available_at) with `task_type IN (…)` and passed — and locked — every entry of other types
// ahead of its first eligible row.

const OTHERS = 10_000;
const HOUR = 3_600_000;
const deps = testDeps();

describe.skipIf(!hasMariadb())(`a claim behind ${OTHERS} queued operations of a task type it does not run, on MariaDB`, () => {
  let t: TestDatabase;
  let mine: string;
  beforeAll(async () => {
    // One connection: the claim's statements and the Handler_read_* reads around it share a session.
    t = await createTestDatabase('mariadb', { poolSize: 1 });
    // Older and of higher priority than the test.noop row: ahead of it in any one-lane claim order.
    await insertBacklog(t.store, OTHERS, (i) => ({ status: 'queued', taskType: 'other.type', priority: 5, deadline: HOUR, available: -HOUR + i }));
    [mine] = (await insertBacklog(t.store, 1, () => ({ status: 'queued', taskType: 'test.noop', deadline: HOUR, available: -60_000 }))) as [string];
  });
  afterAll(async () => t?.drop());

  it('reads O(batch) index entries and takes the right row', async () => {
    const before = await handlerReads(t.store.db);
    const claim = await claimNextOperation(new WorkerScope(t.store), deps);
    const reads = readsBetween(before, await handlerReads(t.store.db));
    expect(claim?.operationId).toBe(mine);
    // One range per registered task type (three here) and the guarded UPDATE by id: a handful, never the 10,000.
    expect(reads.total, JSON.stringify(reads.counters)).toBeLessThanOrEqual(4 * deps.registry.types().length);
    expect(reads.counters.Handler_read_next ?? 0).toBeLessThanOrEqual(deps.registry.types().length);
  });

  it('its candidate reads lock only the rows they return, and read the claim index in claim order (no filesort)', async () => {
    await insertBacklog(t.store, 1, () => ({ status: 'queued', taskType: 'test.noop', deadline: HOUR, available: -60_000 }));
    const measured = await inOpenTransaction(
      t.store,
      async (tx) => {
        const rows = [];
        for (const taskType of deps.registry.types()) rows.push(...(await selectClaimCandidates(tx, { lane: 'L', taskType }, true, 1)));
        return rows;
      },
      // The locks are checked below, on a store with more than this one connection.
      async () => {},
    );
    expect(measured.result).toHaveLength(1);
    expect(measured.reads.total).toBeLessThanOrEqual(2 * deps.registry.types().length);
    for (const { sql, plan } of measured.statements) {
      expect(plan[0]?.key, sql).toBe('operations_claim_type_idx');
      expect(plan[0]?.Extra ?? '', sql).not.toContain('filesort');
    }
  });
});

describe.skipIf(!hasMariadb())('claim candidate locks on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb', { poolSize: 4 });
    await insertBacklog(t.store, OTHERS, (i) => ({ status: 'queued', taskType: 'other.type', priority: 5, deadline: HOUR, available: -HOUR + i }));
    await insertBacklog(t.store, 1, () => ({ status: 'queued', taskType: 'test.noop', deadline: HOUR, available: -60_000 }));
  });
  afterAll(async () => t?.drop());

  it(`while a claim's transaction is open it holds the row it read, none of the ${OTHERS} of another type`, async () => {
    await inOpenTransaction(
      t.store,
      async (tx) => {
        const rows = [];
        for (const taskType of deps.registry.types()) rows.push(...(await selectClaimCandidates(tx, { lane: 'L', taskType }, true, 1)));
        return rows;
      },
      async () => expect((await locksHeldBy(t.store)).rows).toBe(1),
    );
  });

  it('a bounded read (a later task type once the batch is full) stays one ordered range of the claim index', async () => {
    const query = claimCandidateQuery(t.store, { lane: 'L', taskType: 'other.type' }, true, 10, { priority: 5, availableAt: '2000-01-01 00:00:00.000000' }).compile();
    const { rows } = await t.store.db.executeQuery<{ key: string | null; type: string; Extra: string | null }>({ ...query, sql: `EXPLAIN ${query.sql}` });
    // On an empty table the planner may pick either claim index (the old one stays one release, so the previous
    // release can still run on this schema); what it reads with a backlog is the O(batch) test above.
    expect(['operations_claim_type_idx', 'operations_claim_lane_idx']).toContain(rows[0]?.key);
    expect(rows[0]?.type).not.toBe('ALL');
    expect(rows[0]?.Extra ?? '').not.toContain('filesort');
  });
});

describe.each(DIALECTS)('claim order across task types and lanes, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    await t.store.db.deleteFrom('operations').execute();
  });

  /** Rows of two registered types and one unregistered, interleaved in priority and age; returns the claimable ones best first. */
  async function seedMixed(): Promise<string[]> {
    const spec = [
      // [task type, priority, available (ms from now), deadline (ms from now)]
      ['test.noop', 0, -50_000, HOUR],
      ['test.stubborn', 0, -60_000, HOUR],
      ['test.noop', 7, -10_000, HOUR],
      ['demo.wait', 7, -20_000, HOUR],
      ['other.type', 9, -90_000, HOUR], // not registered: never claimed
      ['test.stubborn', 3, -30_000, HOUR],
      ['test.noop', 3, -40_000, HOUR],
      ['test.noop', 9, -5_000, -1_000], // past its deadline: never claimed
      ['test.stubborn', 9, 60_000, HOUR], // not available yet: never claimed
      ['demo.wait', -2, -70_000, HOUR],
    ] as const;
    const ids: { id: string; priority: number; available: number; claimable: boolean }[] = [];
    for (const [taskType, priority, available, deadline] of spec) {
      const [id] = await insertBacklog(t.store, 1, () => ({ status: 'queued', taskType, priority, available, deadline }));
      ids.push({ id: id as string, priority, available, claimable: taskType !== 'other.type' && deadline > 0 && available <= 0 });
    }
    return ids
      .filter((r) => r.claimable)
      .sort((a, b) => b.priority - a.priority || a.available - b.available)
      .map((r) => r.id);
  }

  it.skipIf(skip)('one claim after another takes the highest priority, then the oldest, across task types; never early, never past deadline', async () => {
    const expected = await seedMixed();
    const worker = new WorkerScope(t.store);
    const taken: string[] = [];
    for (let c = await claimNextOperation(worker, deps); c; c = await claimNextOperation(worker, deps)) taken.push(c.operationId);
    expect(taken).toEqual(expected);
  });

  it.skipIf(skip)('claims arriving together (one group transaction) take the same rows in the same order', async () => {
    const expected = await seedMixed();
    const worker = new WorkerScope(t.store);
    const claims = await Promise.all(Array.from({ length: expected.length + 2 }, () => claimNextOperation(worker, deps)));
    const taken = claims.filter((c): c is ClaimedOperation => c !== null).map((c) => c.operationId);
    expect(taken).toEqual(expected);
    expect(claims.filter((c) => c === null)).toHaveLength(2);
  });

  it.skipIf(skip || dialect !== 'sqlite')('SQLite searches the claim index by lane and task type, in claim order (no temporary B-tree)', async () => {
    const plans = await sqlitePlans(t.store, async (tx) => {
      await selectClaimCandidates(tx, { lane: 'L', taskType: 'test.noop' }, false, 5);
      await selectClaimCandidates(tx, { lane: 'X', taskType: 'test.noop' }, false, 5, { priority: 0, availableAt: '2000-01-01 00:00:00.000' });
    });
    for (const { sql, plan } of plans) {
      expect(plan, sql).toContain('SEARCH operations USING INDEX operations_claim_type_idx (claim_lane=? AND task_type=?');
      expect(plan, sql).not.toContain('TEMP B-TREE');
    }
  });
});
