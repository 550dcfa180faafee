import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { loadVerifiedChain } from '../../lib/recovery/chain-verification.js';
import { findRecoveryByKey } from '../../lib/recovery/recovery.repository.js';
import { createS3Client } from '../../lib/results/s3-client.js';
import { createWorkerHandler, type WorkerDeps } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { lambdaContext, wakeupEvent } from '../support/sqs-events.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';
import { spyOnS3, type S3Spy } from './s3-spy.js';

const BUCKET = 'demo-results';

describe.each(DIALECTS)('demo.wait writeResult publishes through the ledger on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let q: LocalQueue;
  let s3: S3Client;
  let spy: S3Spy;
  let owner: OwnerScope;
  let seq = 0;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    q = await startLocalQueue({ buckets: [BUCKET] });
  });
  afterAll(async () => {
    await q?.stop();
    await t?.drop();
  });
  beforeEach(() => {
    if (skip) return;
    s3 = createS3Client({ region: 'us-east-1', endpoint: q.endpoint });
    spy = spyOnS3(s3);
    owner = new OwnerScope(t.store, `result-owner-${++seq}`);
  });
  afterEach(() => s3?.destroy());

  /** Worker deps; `results` as the runtime builds it when RESULTS_BUCKET is set, or none. */
  const worker = (withResults = true) => {
    const deps: WorkerDeps = { ...testDeps(), store: t.store, ...(withResults ? { results: { s3, bucket: BUCKET, store: t.store } } : {}) };
    return { deps, invoke: () => createWorkerHandler(deps)(wakeupEvent(), lambdaContext()) };
  };
  const admit = async (deps: WorkerDeps, params: Record<string, unknown>) =>
    (await admitOperation(owner, deps, `result-${seq}`, { taskType: 'demo.wait', subject: { type: 'demo', id: 'r' }, params })).operation;
  const stored = async (operationId: string) => {
    try {
      return await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `results/${operationId}.json` }))).Body?.transformToString();
    } catch {
      return undefined;
    }
  };
  const ledger = (operationId: string) => findRecoveryByKey(t.store, 'results.s3', `result:${operationId}:1`);

  it.skipIf(skip)('a run that succeeds keeps results/<operationId>.json (ids and counts only) and its ledger operation succeeded', async () => {
    const { deps, invoke } = worker();
    const op = await admit(deps, { durationMs: 30, writeResult: true });
    expect(await invoke()).toEqual({ batchItemFailures: [] });
    expect(await getOperation(owner, op.id)).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(JSON.parse((await stored(op.id)) ?? '{}')).toEqual({ operationId: op.id, attempt: 1, durationMs: 30 });
    const row = await ledger(op.id);
    expect(row?.state).toBe('succeeded');
    expect(await loadVerifiedChain(t.store, row?.id ?? '')).toEqual({ ok: true });
    expect(spy.calls.get('PutObjectCommand')).toBe(1);
  });

  it.skipIf(skip)('a cancel that lands after the write: the run ends cancelled and the object is deleted through the ledger', async () => {
    const { deps, invoke } = worker();
    const op = await admit(deps, { durationMs: 30, writeResult: true });
    spy.after('PutObjectCommand', async () => {
      await cancelOperation(owner, op.id);
    });
    expect(await invoke()).toEqual({ batchItemFailures: [] });
    expect((await getOperation(owner, op.id)).status).toBe('cancelled');
    const row = await waitFor(async () => {
      const current = await ledger(op.id);
      return current?.state === 'verified_recovered' ? current : undefined;
    }, { what: 'the result write to be compensated' });
    expect(await stored(op.id)).toBeUndefined();
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
  });

  it.skipIf(skip)('without writeResult, or without a results bucket, demo.wait behaves as before and never touches S3', async () => {
    const plain = worker();
    const withoutFlag = await admit(plain.deps, { durationMs: 0 });
    await plain.invoke();
    expect((await getOperation(owner, withoutFlag.id)).status).toBe('succeeded');

    seq += 1;
    const unconfigured = worker(false);
    const withoutBucket = await admit(unconfigured.deps, { durationMs: 0, writeResult: true });
    await unconfigured.invoke();
    expect((await getOperation(owner, withoutBucket.id)).status).toBe('succeeded');

    expect(spy.calls.size).toBe(0);
    expect(await ledger(withoutFlag.id)).toBeUndefined();
    expect(await ledger(withoutBucket.id)).toBeUndefined();
  });
});
