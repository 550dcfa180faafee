import { randomUUID } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { loadVerifiedChain } from '../../lib/recovery/chain-verification.js';
import { NothingToTakeOverError, RecoveryKeyUsedError } from '../../lib/recovery/recovery-errors.js';
import { findRecoveryByKey, findRecoveryOperation, listCheckpoints } from '../../lib/recovery/recovery.repository.js';
import { compensateResultObject } from '../../lib/results/compensate-result-object.js';
import { confirmResultObject } from '../../lib/results/confirm-result-object.js';
import { reconcileResultObject } from '../../lib/results/reconcile-result-object.js';
import { ResultObjectRejectedError } from '../../lib/results/result-errors.js';
import { createS3Client } from '../../lib/results/s3-client.js';
import { writeResultObject, type WriteResultObjectInput } from '../../lib/results/write-result-object.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';
import { spyOnS3, type S3Spy } from './s3-spy.js';

const BUCKET = 'results-test';
const LEASE_MS = 10_000;

describe.each(DIALECTS)('result objects in S3 through the recovery ledger on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let q: LocalQueue;
  let s3: S3Client;
  let spy: S3Spy;
  let probe: S3Client;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    q = await startLocalQueue({ buckets: [BUCKET] });
    probe = createS3Client({ region: 'us-east-1', endpoint: q.endpoint });
  });
  afterAll(async () => {
    probe?.destroy();
    await q?.stop();
    await t?.drop();
  });
  beforeEach(() => {
    if (skip) return;
    t.clock.offsetMs = 0;
    s3 = createS3Client({ region: 'us-east-1', endpoint: q.endpoint });
    spy = spyOnS3(s3);
  });
  afterEach(() => s3?.destroy());

  const body = (operationId: string, attempt = 1) => JSON.stringify({ operationId, attempt, durationMs: 30 });
  const input = (operationId: string, overrides: Partial<WriteResultObjectInput> = {}): WriteResultObjectInput => ({
    s3,
    store: t.store,
    bucket: BUCKET,
    operationId,
    writeKey: 1,
    body: body(operationId),
    leaseOwner: 'runtime-a',
    leaseMs: LEASE_MS,
    ...overrides,
  });
  const key = (operationId: string) => `results/${operationId}.json`;
  const stored = async (operationId: string) => {
    try {
      return await (await probe.send(new GetObjectCommand({ Bucket: BUCKET, Key: key(operationId) }))).Body?.transformToString();
    } catch {
      return undefined;
    }
  };
  const states = async (operationId: string) => (await listCheckpoints(t.store, operationId)).map((c) => [c.kind, c.state]);
  const ledgerRow = async (operationId: string, writeKey: number | string = 1) => {
    const row = await findRecoveryByKey(t.store, 'results.s3', `result:${operationId}:${writeKey}`);
    if (!row) throw new Error('no ledger operation');
    return row;
  };

  it.skipIf(skip)('write then confirm: the object exists, the ledger succeeded with verified checks and a verifying chain, one PutObject', async () => {
    const id = randomUUID();
    const written = await writeResultObject(input(id));
    expect(written.handle.state).toBe('running');
    await confirmResultObject(s3, written);

    expect(await stored(id)).toBe(body(id));
    const row = await ledgerRow(id);
    expect(row).toMatchObject({ state: 'succeeded', effect_class: 'compensatable', kind: 'put_object', lease_owner: null });
    expect(JSON.parse(row.recovery_plan)).toEqual({ undo: 'delete_object', objectRef: `s3://${BUCKET}/${key(id)}` });
    expect(JSON.parse(row.precondition_evidence)).toEqual({ objectExisted: false });
    expect(await states(row.id)).toEqual([
      ['begin', 'running'],
      ['object_written', 'running'],
      ['completed', 'succeeded'],
    ]);
    const [, writtenCp, completed] = await listCheckpoints(t.store, row.id);
    expect(JSON.parse(writtenCp?.evidence ?? '{}')).toEqual({ etag: written.etag, bytes: body(id).length, bodyDigest: written.bodyDigest });
    expect(JSON.parse(completed?.evidence ?? '{}')).toMatchObject({ checks: ['object_written', 'object_head'], 'object_head.etag': written.etag });
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
    expect(spy.calls.get('PutObjectCommand')).toBe(1);
    expect(JSON.stringify(await listCheckpoints(t.store, row.id))).not.toContain('durationMs');
  });

  it.skipIf(skip)('compensate: the object is deleted and the ledger goes recovery_required → recovering → verified_recovered', async () => {
    const id = randomUUID();
    const written = await writeResultObject(input(id));
    await compensateResultObject({ s3, store: t.store, handle: written.handle, reason: 'run_cancelled' });

    expect(await stored(id)).toBeUndefined();
    const row = await ledgerRow(id);
    expect(row.state).toBe('verified_recovered');
    expect(await states(row.id)).toEqual([
      ['begin', 'running'],
      ['object_written', 'running'],
      ['recovery_required', 'recovery_required'],
      ['recovering', 'recovering'],
      ['verified_recovered', 'verified_recovered'],
    ]);
    const last = (await listCheckpoints(t.store, row.id)).at(-1);
    expect(JSON.parse(last?.evidence ?? '{}')).toMatchObject({ checks: ['object_absent'], 'object_absent.headStatus': 'HTTP_404', 'object_absent.deleted': true });
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
  });

  it.skipIf(skip)('a crash right after PutObject (before any checkpoint): takeover → recovery_required, reconciliation deletes it → verified_recovered; written exactly once', async () => {
    const id = randomUUID();
    spy.freezeAfter('PutObjectCommand');
    void writeResultObject(input(id)); // the runtime "dies" inside PutObject's answer: this never settles
    await waitFor(async () => (await stored(id)) !== undefined, { what: 'the object to land' });
    const row = await waitFor(() => findRecoveryByKey(t.store, 'results.s3', `result:${id}:1`), { what: 'the ledger intent' });
    expect(await states(row.id)).toEqual([['begin', 'running']]);

    const reconcile = () => reconcileResultObject({ s3: probe, store: t.store, operationId: row.id, leaseOwner: 'reconciler', leaseMs: LEASE_MS });
    await expect(reconcile()).rejects.toBeInstanceOf(NothingToTakeOverError);
    t.clock.advance(LEASE_MS + 1);
    await reconcile();

    expect(await stored(id)).toBeUndefined();
    expect(await states(row.id)).toEqual([
      ['begin', 'running'],
      ['takeover', 'recovery_required'],
      ['recovering', 'recovering'],
      ['verified_recovered', 'verified_recovered'],
    ]);
    const takeover = (await listCheckpoints(t.store, row.id))[1];
    expect(takeover).toMatchObject({ fence: 2, previous_fence: 1 });
    expect(JSON.parse(takeover?.evidence ?? '{}')).toMatchObject({ reexecuted: false });
    expect(spy.calls.get('PutObjectCommand')).toBe(1);
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
  });

  it.skipIf(skip)('a crash after the object_written checkpoint, before confirmation, is reconciled the same way', async () => {
    const id = randomUUID();
    const written = await writeResultObject(input(id)); // …and the runtime dies before it confirms
    t.clock.advance(LEASE_MS + 1);
    await reconcileResultObject({ s3: probe, store: t.store, operationId: written.handle.operationId, leaseOwner: 'reconciler' });
    expect(await stored(id)).toBeUndefined();
    expect((await findRecoveryOperation(t.store, written.handle.operationId))?.state).toBe('verified_recovered');
    expect(spy.calls.get('PutObjectCommand')).toBe(1);
  });

  it.skipIf(skip)("undoing an interrupted attempt never deletes a later attempt's object at the same key", async () => {
    const id = randomUUID();
    const first = await writeResultObject(input(id, { writeKey: 1 })); // attempt 1 dies unconfirmed
    const second = await writeResultObject(input(id, { writeKey: 2, body: body(id, 2), leaseOwner: 'runtime-b' }));
    await confirmResultObject(s3, second);
    expect(JSON.parse((await findRecoveryOperation(t.store, second.handle.operationId))?.precondition_evidence ?? '{}')).toEqual({ objectExisted: true });

    t.clock.advance(LEASE_MS + 1);
    await reconcileResultObject({ s3: probe, store: t.store, operationId: first.handle.operationId, leaseOwner: 'reconciler' });
    expect(await stored(id)).toBe(body(id, 2));
    const last = (await listCheckpoints(t.store, first.handle.operationId)).at(-1);
    expect(last?.state).toBe('verified_recovered');
    expect(JSON.parse(last?.evidence ?? '{}')).toMatchObject({ checks: ['object_replaced'], 'object_replaced.deleted': false });
  });

  it.skipIf(skip)('a PutObject without an answer is compensated at once: the error surfaces, the object is gone, verified_recovered', async () => {
    const id = randomUUID();
    spy.after('PutObjectCommand', async () => {
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    });
    await expect(writeResultObject(input(id))).rejects.toThrow('socket hang up');
    expect(await stored(id)).toBeUndefined();
    const row = await ledgerRow(id);
    expect(row.state).toBe('verified_recovered');
    expect((await states(row.id)).map(([kind]) => kind)).toEqual(['begin', 'recovery_required', 'recovering', 'verified_recovered']);
  });

  it.skipIf(skip)('S3 refusing the PutObject (4xx) records rejected and writes nothing', async () => {
    const id = randomUUID();
    const error = await writeResultObject(input(id, { bucket: 'no-such-bucket' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResultObjectRejectedError);
    expect(error).toMatchObject({ resultCode: 'NoSuchBucket' });
    const row = await findRecoveryByKey(t.store, 'results.s3', `result:${id}:1`);
    expect(row?.state).toBe('rejected');
    const last = (await listCheckpoints(t.store, row?.id ?? '')).at(-1);
    expect(JSON.parse(last?.evidence ?? '{}')).toMatchObject({ resultCode: 'NoSuchBucket', httpStatus: 404 });
  });

  it.skipIf(skip)('a write key is spent for ever: the same attempt cannot write again', async () => {
    const id = randomUUID();
    await confirmResultObject(s3, await writeResultObject(input(id)));
    await expect(writeResultObject(input(id))).rejects.toBeInstanceOf(RecoveryKeyUsedError);
    expect(spy.calls.get('PutObjectCommand')).toBe(1);
    await expect(probe.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key(id) }))).resolves.toBeDefined();
  });
});
