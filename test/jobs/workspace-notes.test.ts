import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inTransaction } from '../../lib/db/transaction.js';
import { createJob } from '../../lib/jobs/jobs.js';
import { lockOwnedJob } from '../../lib/jobs/job.repository.js';
import { findNote, upsertNote, type NoteWrite } from '../../lib/jobs/workspace-note.repository.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { waitFor } from '../support/wait-for.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

const OP_1 = '11111111-1111-4111-8111-111111111111';
const OP_2 = '22222222-2222-4222-8222-222222222222';

describe.each(DIALECTS)('AI workspace notes on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    await t.store.db.deleteFrom('ai_workspace_notes').execute();
    await t.store.db.deleteFrom('jobs').execute();
  });

  const jobOf = async (owner: string) => (await createJob(new OwnerScope(t.store, owner), { title: 'Engineer', company: 'Acme', description: 'Text.' })).id;
  const upsert = (note: NoteWrite) => inTransaction(t.store, (tx) => upsertNote(tx, note));
  const countNotes = async () => Number((await t.store.db.selectFrom('ai_workspace_notes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  it.skipIf(skip)('the first upsert inserts the note; the next one for the same (owner, job, kind) replaces content and operation in place', async () => {
    const jobId = await jobOf('alice');
    const first = { ownerUserId: 'alice', jobId, noteKind: 'strategy.snapshot', contentJson: '{"v":1}', operationId: OP_1 };
    expect(await upsert(first)).toBe('inserted');
    const inserted = await findNote(t.store, 'alice', jobId, 'strategy.snapshot');
    expect(inserted).toMatchObject({ owner_user_id: 'alice', job_id: jobId, note_kind: 'strategy.snapshot', content_json: '{"v":1}', operation_id: OP_1 });
    expect(inserted?.created_at).toBe(inserted?.updated_at);

    t.clock.advance(1_000);
    expect(await upsert({ ...first, contentJson: '{"v":2}', operationId: OP_2 })).toBe('replaced');
    const replaced = await findNote(t.store, 'alice', jobId, 'strategy.snapshot');
    expect(replaced).toMatchObject({ id: inserted?.id, created_at: inserted?.created_at, content_json: '{"v":2}', operation_id: OP_2 });
    expect(replaced!.updated_at > replaced!.created_at).toBe(true);
    expect(await countNotes()).toBe(1);
  });

  it.skipIf(skip)('notes of different kinds, and of different jobs, are separate notes', async () => {
    const [a, b] = [await jobOf('alice'), await jobOf('alice')];
    const base = { ownerUserId: 'alice', contentJson: '{}', operationId: OP_1 };
    expect(await upsert({ ...base, jobId: a, noteKind: 'strategy.snapshot' })).toBe('inserted');
    expect(await upsert({ ...base, jobId: a, noteKind: 'cover.letter' })).toBe('inserted');
    expect(await upsert({ ...base, jobId: b, noteKind: 'strategy.snapshot' })).toBe('inserted');
    expect(await countNotes()).toBe(3);
  });

  it.skipIf(skip)("different owners' notes are independent: writing one never changes the other", async () => {
    const [aliceJob, bobJob] = [await jobOf('alice'), await jobOf('bob')];
    expect(await upsert({ ownerUserId: 'alice', jobId: aliceJob, noteKind: 'k', contentJson: '"alice"', operationId: OP_1 })).toBe('inserted');
    expect(await upsert({ ownerUserId: 'bob', jobId: bobJob, noteKind: 'k', contentJson: '"bob"', operationId: OP_2 })).toBe('inserted');
    expect(await upsert({ ownerUserId: 'bob', jobId: bobJob, noteKind: 'k', contentJson: '"bob again"', operationId: OP_2 })).toBe('replaced');
    expect((await findNote(t.store, 'alice', aliceJob, 'k'))?.content_json).toBe('"alice"');
    expect((await findNote(t.store, 'bob', bobJob, 'k'))?.content_json).toBe('"bob again"');
  });

  it.skipIf(skip)("a note is never written for another owner's job, nor for a missing one: job_not_found, nothing written", async () => {
    const aliceJob = await jobOf('alice');
    expect(await upsert({ ownerUserId: 'alice', jobId: aliceJob, noteKind: 'k', contentJson: '"alice"', operationId: OP_1 })).toBe('inserted');
    expect(await upsert({ ownerUserId: 'mallory', jobId: aliceJob, noteKind: 'k', contentJson: '"mallory"', operationId: OP_2 })).toBe('job_not_found');
    expect(await upsert({ ownerUserId: 'mallory', jobId: aliceJob, noteKind: 'other', contentJson: '"mallory"', operationId: OP_2 })).toBe('job_not_found');
    expect(
      await upsert({ ownerUserId: 'alice', jobId: '00000000-0000-4000-8000-000000000000', noteKind: 'k', contentJson: '{}', operationId: OP_1 }),
    ).toBe('job_not_found');
    expect(await countNotes()).toBe(1);
    expect((await findNote(t.store, 'alice', aliceJob, 'k'))?.content_json).toBe('"alice"');
  });

  it.skipIf(skip)("findNote is owner-scoped: another owner naming the same job and kind finds nothing", async () => {
    const aliceJob = await jobOf('alice');
    await upsert({ ownerUserId: 'alice', jobId: aliceJob, noteKind: 'k', contentJson: '{}', operationId: OP_1 });
    expect(await findNote(t.store, 'mallory', aliceJob, 'k')).toBeUndefined();
    expect(await findNote(t.store, 'alice', aliceJob, 'other-kind')).toBeUndefined();
    expect(await findNote(t.store, 'alice', aliceJob, 'k')).toBeDefined();
  });

  it.skipIf(skip)('the schema itself refuses a second note of a kind for the same owner and job (duplicate key)', async () => {
    const jobId = await jobOf('alice');
    const row = { owner_user_id: 'alice', job_id: jobId, note_kind: 'k', content_json: '{}', operation_id: OP_1, created_at: t.store.timeAt(), updated_at: t.store.timeAt() };
    await t.store.db.insertInto('ai_workspace_notes').values({ ...row, id: '33333333-3333-4333-8333-333333333333' }).execute();
    const duplicate = await t.store.db
      .insertInto('ai_workspace_notes')
      .values({ ...row, id: '44444444-4444-4444-8444-444444444444' })
      .execute()
      .catch((error: unknown) => error);
    expect(t.store.caps.isDuplicateKey(duplicate)).toBe(true);
  });

  it.skipIf(skip)('lockOwnedJob returns only the owner\'s job', async () => {
    const jobId = await jobOf('alice');
    expect((await inTransaction(t.store, (tx) => lockOwnedJob(tx, 'alice', jobId, t.store.caps.rowLocks)))?.id).toBe(jobId);
    expect(await inTransaction(t.store, (tx) => lockOwnedJob(tx, 'mallory', jobId, t.store.caps.rowLocks))).toBeUndefined();
  });

  it.skipIf(skip)('eight concurrent writers of the same note, each under lockOwnedJob: one inserts, seven replace, none fails, one note', async () => {
    const jobId = await jobOf('alice');
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        inTransaction(t.store, async (tx) => {
          expect(await lockOwnedJob(tx, 'alice', jobId, t.store.caps.rowLocks)).toBeDefined();
          return upsertNote(tx, { ownerUserId: 'alice', jobId, noteKind: 'k', contentJson: `{"writer":${i}}`, operationId: OP_1 });
        }),
      ),
    );
    expect(outcomes.filter((o) => o === 'inserted')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'replaced')).toHaveLength(7);
    expect(await countNotes()).toBe(1);
  });
});

describe.skipIf(!hasMariadb())('lockOwnedJob on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  /**
   * Statements of this test's database still running a `… from jobs … for update` (the one that took the lock has
   * finished, so any such statement is waiting for it). The processlist, not INNODB_TRX: MariaDB waits for the lock of a
   * primary-key lookup while optimising it (state "Statistics"), before INNODB_TRX lists the transaction as waiting.
   */
  const lockWaits = async () => {
    const rows = await sql<{ n: number }>`
      select count(*) as n from information_schema.PROCESSLIST
      where DB = database() and ID <> CONNECTION_ID() and INFO like ${'%from `jobs`%for update%'}`.execute(t.store.db);
    return Number(rows.rows[0]?.n ?? 0);
  };

  it("a second transaction locking the same job waits until the first commits, then sees the first one's note", async () => {
    const jobId = (await createJob(new OwnerScope(t.store, 'alice'), { title: 'Engineer', company: 'Acme', description: 'Text.' })).id;
    let releaseFirst!: () => void;
    const firstMayCommit = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstLocked!: () => void;
    const firstHasLock = new Promise<void>((resolve) => (firstLocked = resolve));
    const events: string[] = [];

    const first = inTransaction(t.store, async (tx) => {
      await lockOwnedJob(tx, 'alice', jobId, true);
      firstLocked();
      const outcome = await upsertNote(tx, { ownerUserId: 'alice', jobId, noteKind: 'k', contentJson: '"first"', operationId: OP_1 });
      await firstMayCommit;
      events.push('first is about to commit');
      return outcome;
    });
    await firstHasLock;
    expect(await lockWaits()).toBe(0);
    const second = inTransaction(t.store, async (tx) => {
      await lockOwnedJob(tx, 'alice', jobId, true);
      events.push('second has the lock');
      return upsertNote(tx, { ownerUserId: 'alice', jobId, noteKind: 'k', contentJson: '"second"', operationId: OP_2 });
    });
    try {
      await waitFor(async () => (await lockWaits()) > 0, { what: 'the second transaction to wait for the job row lock' });
      expect(events).toEqual([]);
    } finally {
      releaseFirst(); // also on failure, so no transaction is left open when the database is dropped
    }
    expect(await first).toBe('inserted');
    expect(await second).toBe('replaced');
    expect(events).toEqual(['first is about to commit', 'second has the lock']);
    expect((await findNote(t.store, 'alice', jobId, 'k'))?.content_json).toBe('"second"');
  });
});
