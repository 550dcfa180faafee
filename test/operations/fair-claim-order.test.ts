import { beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { MAX_TURNS_PER_CLAIM } from '../../lib/operations/lease/fair-claim.js';
import { claimNextOperation, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { allowListedTask } from '../support/ai-rig.js';
import { testDeps } from '../support/fixtures.js';
import { inTransaction } from '../../lib/db/transaction.js';
import { markOwnersReady } from '../../lib/operations/lease/owner-turns.repository.js';
import { insertBacklog } from '../support/operation-backlog.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';

// The fair claim order (docs/design.md §4): task types of a higher priority first; within a priority, owners take
// turns — the (task type, owner) pair served least recently first; within one owner's queue, highest priority, then
// oldest. Never early, never past the deadline.

const HOUR = 3_600_000;

// A conformance suite: the same cases for `claim_operations_v1` and the in-process `FairClaim` (docs/design.md §9).
describe.each(IMPLEMENTATIONS)('the fair claim order: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;

  beforeEach(async () => {
    if (skip) return;
    deps = testDeps({}, { perOwner: 100, runningPerOwner: 100 });
  });

  const admit = async (ownerUserId: string, taskType = 'test.noop') =>
    (await admitOperation(new OwnerScope(db.store, ownerUserId), deps, `k-${++seq}`, { taskType, subject: { type: 'doc', id: `d${seq}` }, params: {} })).operation.id;
  const claimOne = () => claimNextOperation(new WorkerScope(db.store), deps);
  const claimInTurn = async (n: number) => {
    const claims: ClaimedOperation[] = [];
    for (let i = 0; i < n; i++) {
      const claim = await claimOne();
      if (claim) claims.push(claim);
    }
    return claims;
  };

  it.skipIf(skip)("owners take turns: behind one owner's backlog, every other owner's first operation runs before that owner's next", async () => {
    for (let i = 0; i < 6; i++) await admit('hog');
    await admit('amy');
    await admit('bea');
    await admit('cy');
    const owners = (await claimInTurn(9)).map((claim) => claim.ownerUserId);
    expect(new Set(owners.slice(0, 4))).toEqual(new Set(['hog', 'amy', 'bea', 'cy']));
    expect(owners.slice(4)).toEqual(['hog', 'hog', 'hog', 'hog', 'hog']);
  });

  it.skipIf(skip)('owners never served yet go in the database key order, code point order beyond the BMP included', async () => {
    // U+FF01 (UTF-8 EF BC 81) sorts before U+1F600 (F0 9F 98 80) in the database, after it in JavaScript's UTF-16 `<`:
    // every claimer must take (and lock) turns in the database's order.
    for (const ownerUserId of ['\u{1F600}', '\uFF01', 'z']) await admit(ownerUserId);
    expect((await claimInTurn(3)).map((claim) => claim.ownerUserId)).toEqual(['z', '\uFF01', '\u{1F600}']);
  });

  it.skipIf(skip)('a claim reads a bounded number of turns: behind many turns with nothing due, the work waits one claim more', async () => {
    // Turns an owner's last run left behind (nothing due), never served, all ahead of the owner with work ("zzz").
    const dead = MAX_TURNS_PER_CLAIM + 44;
    const rows = Array.from({ length: dead }, (_, i) => ({
      task_type: 'test.noop',
      owner_user_id: `dead-${String(i).padStart(4, '0')}`,
      ready_at: '2000-01-01 00:00:00.000',
      served_at: '1970-01-01 00:00:00.000',
      work_seq: i,
    }));
    await db.store.db.insertInto('owner_turns').values(rows).execute();
    const id = await admit('zzz');
    expect(await claimOne()).toBeNull();
    // The turns it read and found empty are retired; the rest (and the owner with work) wait for the next claim.
    expect(Number((await db.store.db.selectFrom('owner_turns').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n)).toBe(44 + 1);
    expect((await claimOne())?.operationId).toBe(id);
  });

  it.skipIf(skip)('a claimer serving only some lanes sends the empty turns it cannot retire to the back: they never pin the bound', async () => {
    // Turns of a model task type with nothing due, ahead of an owner served before; a claimer whose external route is
    // unavailable serves the local lane only, so it cannot know those turns are empty in both lanes.
    deps.registry.register(allowListedTask);
    const rows = Array.from({ length: MAX_TURNS_PER_CLAIM + 10 }, (_, i) => ({
      task_type: allowListedTask.type,
      owner_user_id: `dead-${String(i).padStart(4, '0')}`,
      ready_at: '2000-01-01 00:00:00.000',
      served_at: '1970-01-01 00:00:00.000',
      work_seq: i,
    }));
    await db.store.db.insertInto('owner_turns').values(rows).execute();
    const id = await admit('zzz', allowListedTask.type);
    await db.store.db.updateTable('owner_turns').set({ served_at: '1980-01-01 00:00:00.000' }).where('owner_user_id', '=', 'zzz').execute();
    const localOnly = () => claimNextOperation(new WorkerScope(db.store), deps, { local: true, external: false });
    const claims = [await localOnly(), await localOnly()];
    expect(claims.map((claim) => claim?.operationId ?? null)).toEqual([null, id]);
  });

  it.skipIf(skip)('a newly arrived owner goes before an owner just served', async () => {
    for (let i = 0; i < 4; i++) await admit('hog');
    expect((await claimOne())?.ownerUserId).toBe('hog');
    await admit('zed');
    expect((await claimOne())?.ownerUserId).toBe('zed');
    expect((await claimOne())?.ownerUserId).toBe('hog');
  });

  it.skipIf(skip)("within one owner's queue: highest priority, then oldest; never early, never past the deadline", async () => {
    const spec = [
      // [priority, available (ms from now), deadline (ms from now)]
      [0, -50_000, HOUR],
      [7, -10_000, HOUR],
      [3, -30_000, HOUR],
      [7, -20_000, HOUR],
      [9, -5_000, -1_000], // past its deadline: never claimed
      [9, 60_000, HOUR], // not available yet: never claimed
      [0, -70_000, HOUR],
    ] as const;
    const rows: { id: string; priority: number; available: number; claimable: boolean }[] = [];
    for (const [priority, available, deadline] of spec) {
      const [id] = await insertBacklog(db.store, 1, () => ({ status: 'queued', priority, available, deadline }), 'solo');
      rows.push({ id: id as string, priority, available, claimable: deadline > 0 && available <= 0 });
    }
    const expected = rows
      .filter((r) => r.claimable)
      .sort((a, b) => b.priority - a.priority || a.available - b.available)
      .map((r) => r.id);
    const taken: string[] = [];
    for (let c = await claimOne(); c; c = await claimOne()) taken.push(c.operationId);
    expect(taken).toEqual(expected);
  });

  it.skipIf(skip)("a task type of a higher priority is served first, whoever's turn it is", async () => {
    deps.registry.register({ ...deps.registry.get('test.noop'), type: 'test.urgent', priority: 5 });
    await admit('amy');
    await admit('bea', 'test.urgent');
    await admit('amy', 'test.urgent');
    const claims = await claimInTurn(3);
    expect(claims.map((c) => c.taskType)).toEqual(['test.urgent', 'test.urgent', 'test.noop']);
  });

  it.skipIf(skip)('claims arriving together share the turns: six claimers over three owners take two each', async () => {
    for (const owner of ['amy', 'bea', 'cy']) for (let i = 0; i < 5; i++) await admit(owner);
    const claims = await Promise.all(Array.from({ length: 6 }, () => claimOne()));
    const per = (owner: string) => claims.filter((c) => c?.ownerUserId === owner).length;
    expect([per('amy'), per('bea'), per('cy')]).toEqual([2, 2, 2]);
  });

  it.skipIf(skip)('work-conserving: a lone owner takes every claim, up to its running limit', async () => {
    deps = testDeps({}, { perOwner: 100, runningPerOwner: 4 });
    for (let i = 0; i < 10; i++) await admit('hog');
    const claims = await Promise.all(Array.from({ length: 10 }, () => claimOne()));
    expect(claims.filter((c) => c !== null)).toHaveLength(4);
  });

  it.skipIf(skip)('work-conserving past hundreds of owners at their limit: a due operation within its owner\'s limit is still claimed', async () => {
    deps = testDeps({}, { perOwner: 100, runningPerOwner: 1 });
    const OWNERS = 300;
    for (let i = 0; i < OWNERS; i++) await insertBacklog(db.store, 2, () => ({ status: 'queued', deadline: HOUR, available: -60_000 }), `busy-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < OWNERS; i++) expect(await claimOne(), `claim ${i}`).not.toBeNull();
    const zed = await admit('zed');
    expect((await claimOne())?.operationId).toBe(zed);
  });

  it.skipIf(skip)("a re-created turn never reuses the work_seq of the row it replaced (a stale claim's guarded retire cannot delete it)", async () => {
    const [id] = await insertBacklog(db.store, 1, () => ({ status: 'queued', deadline: HOUR, available: -60_000 }), 'amy');
    const seqOf = async () => (await db.store.db.selectFrom('owner_turns').select('work_seq').where('owner_user_id', '=', 'amy').executeTakeFirstOrThrow()).work_seq;
    const first = await seqOf();
    await db.store.db.deleteFrom('owner_turns').execute();
    await inTransaction(db.store, (tx) => markOwnersReady(tx, [id as string]));
    expect(await seqOf()).not.toBe(first);
  });

  it.skipIf(skip)('a turn with nothing claimable left is retired; one with only later work waits until that work is due', async () => {
    const owner = new OwnerScope(db.store, 'amy');
    const id = await admit('amy');
    await cancelOperation(owner, id);
    expect(await claimOne()).toBeNull();
    expect(await db.store.db.selectFrom('owner_turns').selectAll().execute()).toEqual([]);

    const [later] = await insertBacklog(db.store, 1, () => ({ status: 'waiting_for_retry', available: 60_000, deadline: HOUR }), 'bea');
    expect(await claimOne()).toBeNull();
    const turn = await db.store.db.selectFrom('owner_turns').select('ready_at').where('owner_user_id', '=', 'bea').executeTakeFirstOrThrow();
    const row = await db.store.db.selectFrom('operations').select('available_at').where('id', '=', later as string).executeTakeFirstOrThrow();
    expect(turn.ready_at).toEqual(row.available_at);
    db.t.clock.advance(60_001);
    expect((await claimOne())?.operationId).toBe(later);
  });
});
