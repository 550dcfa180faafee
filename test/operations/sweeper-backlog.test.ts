import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectExpiredLeases } from '../../lib/operations/lifecycle/lifecycle.repository.js';
import { failPastDeadline } from '../../lib/operations/lifecycle/transitions.js';
import { WAITING_STATUSES } from '../../lib/operations/lifecycle/operation-status.js';
import { selectDueWakeups, selectPastDeadline, selectPurgeable } from '../../lib/operations/store/operation.repository.js';
import { runSweepOnce, type SweepCounts } from '../../lib/sweeper/run-sweep-once.js';
import type { TxContext } from '../../lib/db/database.js';
import { testDeps } from '../support/fixtures.js';
import { inOpenTransaction, insertBacklog, locksHeldBy, sqlitePlans, type BacklogRow } from '../support/operation-backlog.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

// docs/design.md §6: every sweeper batch is one short transaction over at most SWEEP_BATCH_SIZE rows, each selection an
// index range read in its own order, so a batch costs what it acts on, not the backlog, and overlapping runs split the
// work (SKIP LOCKED). These tests hold a backlog of 6,000 waiting operations past their deadline — 30 batches — and
// check that bound on MariaDB (entries read, rows locked, plans, two concurrent sweepers) and the plans on SQLite.

const BATCH = 200;
const BACKLOG = 6_000;
/** Expired leases and purgeable rows next to the deadline backlog: each selection has more than a batch to take. */
const OTHER = 3 * BATCH;
const DAY_MS = 86_400_000;
/** Allowance on the entries a batch reads: one per status whose index range ends before the batch is full. */
const RANGE_ENDS = WAITING_STATUSES.length;

const deps = testDeps();
const sweep = (t: TestDatabase) =>
  runSweepOnce({ store: t.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: BATCH, timeBudgetMs: 120_000 });

/** The deadline backlog: `BACKLOG` waiting operations, a third in each waiting state, deadlines an hour ago, wake-ups due. */
const pastDeadline = (i: number): BacklogRow => ({ status: WAITING_STATUSES[i % 3]!, deadline: -3_600_000 + i, wake: -1_800_000 + i });

async function seed(t: TestDatabase): Promise<string[]> {
  const ids = await insertBacklog(t.store, BACKLOG, pastDeadline);
  await insertBacklog(t.store, OTHER, (i) => ({ status: 'running', deadline: 3_600_000, leaseExpires: -60_000 + i }));
  await insertBacklog(t.store, OTHER, (i) => ({ status: 'succeeded', deadline: -40 * DAY_MS, finished: -31 * DAY_MS + i }));
  return ids;
}

/** Each sweeper selection, as its pass calls it (limit `BATCH`, `SKIP LOCKED` on MariaDB), and the index it must read. */
const SELECTIONS: readonly { readonly name: string; readonly index: string; readonly select: (tx: TxContext, skipLocked: boolean) => Promise<readonly unknown[]> }[] = [
  { name: 'expired leases', index: 'operations_expiry_idx', select: (tx, skipLocked) => selectExpiredLeases(tx, BATCH, skipLocked) },
  { name: 'past deadline', index: 'operations_deadline_idx', select: (tx, skipLocked) => selectPastDeadline(tx, BATCH, skipLocked) },
  { name: 'due wake-ups', index: 'operations_wakeup_idx', select: (tx, skipLocked) => selectDueWakeups(tx, BATCH, skipLocked) },
  { name: 'purge', index: 'operations_retention_idx', select: (tx, skipLocked) => selectPurgeable(tx, deps.policy.retentionMs, BATCH, skipLocked) },
];

async function deadlineOutcomes(t: TestDatabase, ids: readonly string[]) {
  const rows = await t.store.db.selectFrom('operations').select(['status', 'failure_code']).where('id', 'in', ids).execute();
  const notifications = await t.store.db
    .selectFrom('operation_notifications')
    .select(['operation_id', t.store.db.fn.countAll<number | string>().as('n')])
    .where('operation_id', 'in', ids)
    .groupBy('operation_id')
    .execute();
  const failedEvents = await t.store.db
    .selectFrom('operation_events')
    .select(['operation_id', t.store.db.fn.countAll<number | string>().as('n')])
    .where('operation_id', 'in', ids)
    .where('to_status', '=', 'failed')
    .groupBy('operation_id')
    .execute();
  return {
    failedDeadline: rows.filter((r) => r.status === 'failed' && r.failure_code === 'deadline_exceeded').length,
    notified: notifications.length,
    notifiedOnce: notifications.every((n) => Number(n.n) === 1),
    failedOnce: failedEvents.length === ids.length && failedEvents.every((e) => Number(e.n) === 1),
  };
}

describe.skipIf(!hasMariadb())(`the sweeper on a backlog of ${BACKLOG} past-deadline operations, on MariaDB`, () => {
  let t: TestDatabase;
  let backlog: string[];
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    backlog = await seed(t);
  });
  afterAll(async () => t?.drop());

  it.each(SELECTIONS)('$name: one batch reads about a batch of index entries, in index order (no filesort), and locks only the rows it returns', async ({ index, select }) => {
    const measured = await inOpenTransaction(
      t.store,
      (tx) => select(tx, true),
      async () => {
        const locks = await locksHeldBy(t.store);
        // Exactly the rows it returns (the index entries it read are bounded by the read count below).
        expect(locks.rows).toBe(BATCH);
      },
    );
    expect(measured.result).toHaveLength(BATCH);
    expect(measured.reads.total, JSON.stringify(measured.reads.counters)).toBeLessThanOrEqual(BATCH + RANGE_ENDS);
    expect(measured.statements.length).toBeGreaterThan(0);
    for (const statement of measured.statements) {
      for (const row of statement.plan) {
        expect(row.key, statement.sql).toBe(index);
        expect(row.type, statement.sql).not.toBe('ALL');
        expect(row.type, statement.sql).not.toBe('index');
        expect(row.Extra ?? '', statement.sql).not.toContain('filesort');
      }
    }
  });

  it('a whole past-deadline batch (selection and the deadline_passed move) holds exactly its own rows while it is open', async () => {
    await inOpenTransaction(
      t.store,
      async (tx) => {
        const ids = await selectPastDeadline(tx, BATCH, true);
        await failPastDeadline(tx, ids);
        return ids;
      },
      async () => expect((await locksHeldBy(t.store)).rows).toBe(BATCH),
    );
  });

  it('while one batch is held open, a second sweeper run fails the rest of the backlog; together every row fails once', async () => {
    let second: SweepCounts | undefined;
    const held = await inOpenTransaction(
      t.store,
      async (tx) => {
        const ids = await selectPastDeadline(tx, BATCH, true);
        await failPastDeadline(tx, ids);
        return ids;
      },
      async () => {
        second = await sweep(t);
      },
      { commit: true },
    );
    expect(held.result).toHaveLength(BATCH);
    expect(second?.deadlinesFailed).toBe(BACKLOG - BATCH);
    expect((second?.leasesRetried ?? 0) + (second?.leasesFailed ?? 0)).toBe(OTHER);
    expect(second?.purged).toBe(OTHER);
    expect(await deadlineOutcomes(t, backlog)).toEqual({ failedDeadline: BACKLOG, notified: BACKLOG, notifiedOnce: true, failedOnce: true });
  });

  it(`two concurrent sweeper runs split a fresh backlog of ${BACKLOG}: both fail some, together all, each once`, async () => {
    const fresh = await insertBacklog(t.store, BACKLOG, pastDeadline, 'second-backlog-owner');
    const [a, b] = await Promise.all([sweep(t), sweep(t)]);
    expect(a.deadlinesFailed).toBeGreaterThan(0);
    expect(b.deadlinesFailed).toBeGreaterThan(0);
    expect(a.deadlinesFailed + b.deadlinesFailed).toBe(BACKLOG);
    expect(await deadlineOutcomes(t, fresh)).toEqual({ failedDeadline: BACKLOG, notified: BACKLOG, notifiedOnce: true, failedOnce: true });
  }, 120_000);
});

describe(`the sweeper on a backlog of ${BACKLOG} past-deadline operations, on SQLite`, () => {
  let t: TestDatabase;
  let backlog: string[];
  beforeAll(async () => {
    t = await createTestDatabase('sqlite');
    backlog = await seed(t);
  });
  afterAll(async () => t?.drop());

  it.each(SELECTIONS)('$name: each statement searches its index in the order it returns (no temporary B-tree) and the batch is full', async ({ index, select }) => {
    let returned = 0;
    const plans = await sqlitePlans(t.store, async (tx) => {
      returned = (await select(tx, false)).length;
    });
    expect(returned).toBe(BATCH);
    expect(plans.length).toBeGreaterThan(0);
    for (const { sql, plan } of plans) {
      expect(plan, sql).toContain(`SEARCH operations USING INDEX ${index} (`);
      expect(plan, sql).not.toContain('TEMP B-TREE');
    }
  });

  it('two sweeper runs started together fail every past-deadline row exactly once', async () => {
    const [a, b] = await Promise.all([sweep(t), sweep(t)]);
    expect(a.deadlinesFailed + b.deadlinesFailed).toBe(BACKLOG);
    expect(await deadlineOutcomes(t, backlog)).toEqual({ failedDeadline: BACKLOG, notified: BACKLOG, notifiedOnce: true, failedOnce: true });
  }, 120_000);
});
