import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SecretInEvidenceError, ValidationError } from '../../lib/errors.js';
import { beginDurableRecoveryOperation, type BeginRecoveryInput } from '../../lib/recovery/begin-recovery-operation.js';
import { verifyAllChains } from '../../lib/recovery/chain-verification.js';
import {
  ChainBrokenError,
  IndependentWriteBlockedError,
  InvalidRecoveryMoveError,
  NothingToTakeOverError,
  RecoveryKeyUsedError,
  StaleFenceError,
  VerificationRequiredError,
} from '../../lib/recovery/recovery-errors.js';
import type { Verification } from '../../lib/recovery/recovery-handle.js';
import { EFFECT_CLASSES, type EffectClass } from '../../lib/recovery/recovery-model.js';
import { takeOverRecoveryOperation } from '../../lib/recovery/take-over-recovery-operation.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

const LEASE_MS = 10_000;
const VERIFIED = { checks: [{ name: 'object_head', evidence: { etag: 'sha256:abc123', bytes: 42 } }] };

describe.each(DIALECTS)('durable recovery ledger on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let seq = 0;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    await sql`create table ledger_domain (id varchar(64) primary key)`.execute(t.store.db);
  });
  afterAll(async () => t?.drop());
  beforeEach(() => {
    if (!skip) t.clock.offsetMs = 0;
  });

  const input = (effectClass: EffectClass = 'compensatable', overrides: Partial<BeginRecoveryInput> = {}): BeginRecoveryInput => ({
    module: 'test.objects',
    kind: 'put_object',
    idempotencyKey: `key-${++seq}`,
    request: { bucket: 'results', key: `obj-${seq}`, bytes: 42 },
    effectClass,
    recoveryPlan: { undo: 'delete_object', objectRef: `s3://results/obj-${seq}` },
    preconditionEvidence: { objectExisted: false },
    leaseOwner: 'runtime-a',
    leaseMs: LEASE_MS,
    ...overrides,
  });
  const row = (id: string) => t.store.db.selectFrom('recovery_operations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const checkpoints = (id: string) => t.store.db.selectFrom('recovery_checkpoints').selectAll().where('operation_id', '=', id).orderBy('seq').execute();

  it.skipIf(skip)('begin commits intent with a genesis checkpoint; progress and verified completion extend a chain that verifies', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input());
    expect(await row(handle.operationId)).toMatchObject({ state: 'running', fence: 1, checkpoint_count: 1, lease_owner: 'runtime-a' });
    await handle.checkpoint('object_written', { etag: 'sha256:abc123' });
    await handle.complete(VERIFIED);
    expect(await row(handle.operationId)).toMatchObject({ state: 'succeeded', checkpoint_count: 3, lease_owner: null, lease_expires_at: null });
    expect((await checkpoints(handle.operationId)).map((c) => [c.seq, c.kind, c.state])).toEqual([
      [0, 'begin', 'running'],
      [1, 'object_written', 'running'],
      [2, 'completed', 'succeeded'],
    ]);
    const report = await verifyAllChains(t.store);
    expect(report.broken).toEqual([]);
  });

  it.skipIf(skip)('completion needs at least one verification check with evidence', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input());
    await expect(handle.complete({ checks: [] })).rejects.toBeInstanceOf(VerificationRequiredError);
    await expect(handle.complete({ checks: [{ name: 'empty', evidence: {} }] })).rejects.toBeInstanceOf(VerificationRequiredError);
    expect((await row(handle.operationId)).checkpoint_count).toBe(1);
  });

  it.skipIf(skip)('a rejection is refused once an effect was recorded; oversized evidence is a validation error', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input());
    await handle.checkpoint('object_written', { etag: 'sha256:abc123' });
    await expect(handle.reject({ providerResult: 'HTTP_409' })).rejects.toBeInstanceOf(InvalidRecoveryMoveError);
    const big = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'x'.repeat(500)]));
    await expect(handle.checkpoint('big', big)).rejects.toBeInstanceOf(ValidationError);
    expect((await row(handle.operationId)).checkpoint_count).toBe(2);
  });

  it.skipIf(skip)('a rejection is terminal rejected; compensation goes recovery_required → recovering → verified_recovered', async () => {
    const rejected = await beginDurableRecoveryOperation(t.store, input());
    await rejected.reject({ providerResult: 'HTTP_409' });
    expect((await row(rejected.operationId)).state).toBe('rejected');
    const compensated = await beginDurableRecoveryOperation(t.store, input());
    await compensated.requireRecovery({ reason: 'downstream_write_failed' });
    await compensated.startRecovery({ action: 'delete_object' });
    await compensated.verifyRecovered({ checks: [{ name: 'object_absent', evidence: { headStatus: 'HTTP_404' } }] });
    expect((await checkpoints(compensated.operationId)).map((c) => c.state)).toEqual(['running', 'recovery_required', 'recovering', 'verified_recovered']);
  });

  it.skipIf(skip)('tampering with any checkpoint — evidence, order, hash, or the operation row — is detected and refuses completion', async () => {
    const tamper = async (change: (id: string) => Promise<unknown>) => {
      const handle = await beginDurableRecoveryOperation(t.store, input());
      await handle.checkpoint('object_written', { etag: 'sha256:abc123' });
      await handle.checkpoint('object_tagged', { tags: 2 });
      await change(handle.operationId);
      const report = await verifyAllChains(t.store);
      expect(report.broken.map((b) => b.operationId)).toContain(handle.operationId);
      await expect(handle.complete(VERIFIED)).rejects.toBeInstanceOf(ChainBrokenError);
      await t.store.db.deleteFrom('recovery_checkpoints').where('operation_id', '=', handle.operationId).execute();
      await t.store.db.deleteFrom('recovery_operations').where('id', '=', handle.operationId).execute();
    };
    const cp = (id: string, s: number) => t.store.db.updateTable('recovery_checkpoints').where('operation_id', '=', id).where('seq', '=', s);
    await tamper((id) => cp(id, 1).set({ evidence: '{"etag":"sha256:forged"}' }).execute());
    await tamper((id) => cp(id, 1).set({ evidence: 'not json at all' }).execute());
    await tamper((id) => cp(id, 2).set({ hash: 'f'.repeat(64) }).execute());
    await tamper(async (id) => {
      await cp(id, 1).set({ seq: 99 }).execute();
      await cp(id, 2).set({ seq: 1 }).execute();
      await cp(id, 99).set({ seq: 2 }).execute();
    });
    await tamper((id) => t.store.db.deleteFrom('recovery_checkpoints').where('operation_id', '=', id).where('seq', '=', 1).execute());
    await tamper((id) => t.store.db.updateTable('recovery_operations').set({ recovery_plan: '{"undo":"nothing"}' }).where('id', '=', id).execute());
    await tamper((id) => t.store.db.updateTable('recovery_operations').set({ idempotency_key: `renamed-${id}` }).where('id', '=', id).execute());
    await tamper((id) => t.store.db.updateTable('recovery_operations').set({ fence: 7 }).where('id', '=', id).execute());
  });

  it.skipIf(skip).each(EFFECT_CLASSES.map((c) => [c]))('takeover of a stale %s operation classifies it, records both fences and never re-executes', async (effectClass) => {
    let effects = 0;
    const handle = await beginDurableRecoveryOperation(t.store, input(effectClass));
    effects += 1; // the caller's effect, run once
    await expect(takeOverRecoveryOperation(t.store, { operationId: handle.operationId, leaseOwner: 'runtime-b', leaseMs: LEASE_MS })).rejects.toBeInstanceOf(
      NothingToTakeOverError,
    );
    t.clock.advance(LEASE_MS + 1);
    const taken = await takeOverRecoveryOperation(t.store, { operationId: handle.operationId, leaseOwner: 'runtime-b', leaseMs: LEASE_MS });
    const expected = { database_atomic: 'failed', compensatable: 'recovery_required', forward_only: 'outcome_unknown', irreversible: 'outcome_unknown' }[effectClass];
    expect(taken.state).toBe(expected);
    expect(await row(handle.operationId)).toMatchObject({ state: expected, fence: 2 });
    const last = (await checkpoints(handle.operationId)).at(-1);
    expect(last).toMatchObject({ kind: 'takeover', fence: 2, previous_fence: 1, state: expected });
    expect(JSON.parse(last?.evidence ?? '{}')).toMatchObject({ previousFence: 1, fence: 2, reexecuted: false });
    expect(effects).toBe(1);
    // the old holder's fence is stale: it can write nothing any more
    await expect(handle.checkpoint('late', { n: 1 })).rejects.toBeInstanceOf(StaleFenceError);
    expect((await row(handle.operationId)).checkpoint_count).toBe(2);
    expect((await verifyAllChains(t.store)).broken).toEqual([]);
  });

  it.skipIf(skip)('a lease can be renewed without a checkpoint, only by its holder and only while it is live', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input('forward_only'));
    t.clock.advance(LEASE_MS - 1_000);
    await handle.renewLease();
    t.clock.advance(5_000);
    await handle.checkpoint('still_mine', { n: 1 });
    expect((await row(handle.operationId)).checkpoint_count).toBe(2);
    t.clock.advance(LEASE_MS + 1);
    await expect(handle.renewLease()).rejects.toBeInstanceOf(StaleFenceError);
  });

  it.skipIf(skip)('an outcome_unknown operation leaves only through resolveUnknown, and check names must be unique', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input('irreversible'));
    t.clock.advance(LEASE_MS + 1);
    const taken = await takeOverRecoveryOperation(t.store, { operationId: handle.operationId, leaseOwner: 'reconciler', leaseMs: LEASE_MS });
    await expect(taken.requireRecovery({ reason: 'guess' })).rejects.toBeInstanceOf(InvalidRecoveryMoveError);
    const twice: Verification = { checks: [{ name: 'lookup', evidence: { a: 1 } }, { name: 'lookup', evidence: { b: 2 } }] };
    await expect(taken.resolveUnknown({ occurred: true, verification: twice })).rejects.toBeInstanceOf(VerificationRequiredError);
    expect((await row(handle.operationId)).state).toBe('outcome_unknown');
  });

  it.skipIf(skip)('resolveUnknown: proof it happened → succeeded; proof it did not → verified_recovered; the key is spent either way', async () => {
    for (const occurred of [true, false]) {
      const begun = input('forward_only');
      const handle = await beginDurableRecoveryOperation(t.store, begun);
      t.clock.advance(LEASE_MS + 1);
      const taken = await takeOverRecoveryOperation(t.store, { operationId: handle.operationId, leaseOwner: 'reconciler', leaseMs: LEASE_MS });
      await expect(taken.resolveUnknown({ occurred, verification: { checks: [] } })).rejects.toBeInstanceOf(VerificationRequiredError);
      await taken.resolveUnknown({ occurred, verification: { checks: [{ name: 'provider_lookup', evidence: { providerResult: occurred ? 'FOUND' : 'NOT_FOUND' } }] } });
      const states = (await checkpoints(handle.operationId)).map((c) => c.state);
      expect(states).toEqual(occurred ? ['running', 'outcome_unknown', 'succeeded'] : ['running', 'outcome_unknown', 'recovery_required', 'recovering', 'verified_recovered']);
      await expect(beginDurableRecoveryOperation(t.store, { ...begun, leaseOwner: 'runtime-c' })).rejects.toBeInstanceOf(RecoveryKeyUsedError);
    }
    expect((await verifyAllChains(t.store)).broken).toEqual([]);
  });

  it.skipIf(skip)('atomic terminal: the domain row and the terminal checkpoint commit together, or neither does', async () => {
    const committed = await beginDurableRecoveryOperation(t.store, input('database_atomic'));
    await t.store.db.transaction().execute(async (trx) => {
      await sql`insert into ledger_domain (id) values (${'committed'})`.execute(trx);
      await committed.completeIn(trx, VERIFIED);
    });
    expect((await row(committed.operationId)).state).toBe('succeeded');
    expect((await sql<{ id: string }>`select id from ledger_domain`.execute(t.store.db)).rows.map((r) => r.id)).toContain('committed');

    const failing = await beginDurableRecoveryOperation(t.store, input('database_atomic'));
    await expect(
      t.store.db.transaction().execute(async (trx) => {
        await sql`insert into ledger_domain (id) values (${'rolled-back'})`.execute(trx);
        await failing.completeIn(trx, VERIFIED);
        throw new Error('forced commit failure');
      }),
    ).rejects.toThrow('forced commit failure');
    expect((await sql<{ id: string }>`select id from ledger_domain`.execute(t.store.db)).rows.map((r) => r.id)).not.toContain('rolled-back');
    expect(await row(failing.operationId)).toMatchObject({ state: 'running', checkpoint_count: 1 });
    t.clock.advance(LEASE_MS + 1);
    expect((await takeOverRecoveryOperation(t.store, { operationId: failing.operationId, leaseOwner: 'sweeper', leaseMs: LEASE_MS })).state).toBe('failed');
  });

  it.skipIf(skip)('secret-looking evidence is refused and nothing is written', async () => {
    const before = (await t.store.db.selectFrom('recovery_operations').select('id').execute()).length;
    await expect(
      beginDurableRecoveryOperation(t.store, input('compensatable', { preconditionEvidence: { note: 'Bearer abcdefghijklmnopqrstuvwxyz123456' } })),
    ).rejects.toBeInstanceOf(SecretInEvidenceError);
    expect((await t.store.db.selectFrom('recovery_operations').select('id').execute()).length).toBe(before);
    const handle = await beginDurableRecoveryOperation(t.store, input());
    await expect(handle.checkpoint('leak', { awsKey: 'AKIAABCDEFGHIJKLMNOP' })).rejects.toBeInstanceOf(SecretInEvidenceError);
    expect((await row(handle.operationId)).checkpoint_count).toBe(1);
  });

  it.skipIf(skip)('two takers racing for one expired operation: exactly one wins, the loser changes nothing', async () => {
    const handle = await beginDurableRecoveryOperation(t.store, input('irreversible'));
    t.clock.advance(LEASE_MS + 1);
    const results = await Promise.allSettled(
      ['taker-1', 'taker-2'].map((leaseOwner) => takeOverRecoveryOperation(t.store, { operationId: handle.operationId, leaseOwner, leaseMs: LEASE_MS })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected');
    expect(lost?.status === 'rejected' && lost.reason).toBeInstanceOf(NothingToTakeOverError);
    expect(await row(handle.operationId)).toMatchObject({ fence: 2, checkpoint_count: 2 });
    expect((await verifyAllChains(t.store)).broken).toEqual([]);
  });
});

describe.skipIf(!hasMariadb())('checkpoints outlive the caller’s rollback on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    await sql`create table ledger_domain (id varchar(64) primary key)`.execute(t.store.db);
  });
  afterAll(async () => t?.drop());

  // (SQLite cannot do this: a transaction that read before another connection wrote can no longer write.)
  it('atomic completion verifies the committed chain even when the caller’s transaction read first', async () => {
    await t.store.db.transaction().execute(async (trx) => {
      await sql`select count(*) from ledger_domain`.execute(trx);
      const handle = await beginDurableRecoveryOperation(t.store, { module: 'test.objects', kind: 'put_object', idempotencyKey: 'read-first', request: {}, effectClass: 'database_atomic', recoveryPlan: { undo: 'none' }, preconditionEvidence: { rows: 0 }, leaseOwner: 'runtime-a', leaseMs: LEASE_MS });
      await sql`insert into ledger_domain (id) values (${'read-first'})`.execute(trx);
      await handle.completeIn(trx, VERIFIED);
    });
  });

  it('a rollback of the caller’s transaction after begin and after a checkpoint leaves both durable', async () => {
    let operationId = '';
    await expect(
      t.store.db.transaction().execute(async (trx) => {
        await sql`insert into ledger_domain (id) values (${'domain-1'})`.execute(trx);
        const handle = await beginDurableRecoveryOperation(t.store, {
          module: 'test.objects',
          kind: 'put_object',
          idempotencyKey: 'rollback-1',
          request: { key: 'x' },
          effectClass: 'compensatable',
          recoveryPlan: { undo: 'delete_object' },
          preconditionEvidence: { objectExisted: false },
          leaseOwner: 'runtime-a',
          leaseMs: LEASE_MS,
        });
        operationId = handle.operationId;
        await handle.checkpoint('object_written', { etag: 'sha256:abc' });
        throw new Error('the caller rolls back');
      }),
    ).rejects.toThrow('the caller rolls back');
    expect((await sql<{ id: string }>`select id from ledger_domain`.execute(t.store.db)).rows.map((r) => r.id)).not.toContain('domain-1');
    const checkpoints = await t.store.db.selectFrom('recovery_checkpoints').select('kind').where('operation_id', '=', operationId).orderBy('seq').execute();
    expect(checkpoints.map((c) => c.kind)).toEqual(['begin', 'object_written']);
  });
});

describe('an independent write on SQLite while the caller holds the write lock', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('sqlite');
    await sql`create table ledger_domain (id varchar(64) primary key)`.execute(t.store.db);
  });
  afterAll(async () => t?.drop());

  it('fails fast with a typed error instead of hanging, and writes nothing', async () => {
    const started = Date.now();
    await expect(
      t.store.db.transaction().execute(async (trx) => {
        await sql`insert into ledger_domain (id) values (${'held'})`.execute(trx);
        await beginDurableRecoveryOperation(t.store, {
          module: 'test.objects',
          kind: 'put_object',
          idempotencyKey: 'blocked-1',
          request: {},
          effectClass: 'compensatable',
          recoveryPlan: { undo: 'delete_object' },
          preconditionEvidence: { objectExisted: false },
          leaseOwner: 'runtime-a',
          leaseMs: LEASE_MS,
        });
      }),
    ).rejects.toBeInstanceOf(IndependentWriteBlockedError);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await t.store.db.selectFrom('recovery_operations').select('id').execute()).toEqual([]);
  });
});
