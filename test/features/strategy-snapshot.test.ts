import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../lib/errors.js';
import { STRATEGY_SNAPSHOT_NOTE_KIND, type StrategySnapshot } from '../../lib/features/strategy-snapshot/strategy-snapshot-output.js';
import { strategySnapshotTask } from '../../lib/features/strategy-snapshot/strategy-snapshot-task.js';
import { upsertNote } from '../../lib/jobs/workspace-note.repository.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { processWakeup, type WorkerDeps } from '../../lib/worker/worker-handler.js';
import type { AiRig } from '../support/ai-rig.js';
import type { ApiTestApp } from '../http/api-test-app.js';
import { useSnapshotSuite } from './snapshot-suite.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';

const SNAPSHOT: StrategySnapshot = {
  summary: 'Lead with platform reliability work.',
  strengths: ['Operated queues at scale'],
  risks: ['No Go experience'],
  questionsToAsk: ['How is on-call shared?'],
  nextSteps: ['Tailor the CV to SRE work'],
};

describe.each(DIALECTS)('strategy.snapshot on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let rig: AiRig;
  let worker: WorkerDeps;
  let seq = 0;

  const suite = useSnapshotSuite(dialect, skip, SNAPSHOT);
  beforeEach(() => {
    ({ app, rig, worker } = suite);
  });

  const createJob = async (owner: string, description = 'We run a job system. Secret-ish posting text.') => {
    const created = await app.call({ method: 'POST', path: '/api/jobs', owner, body: { title: 'SRE', company: 'Acme', description } });
    expect(created.status).toBe(201);
    return created.json.id as string;
  };
  const requestSnapshot = (owner: string, jobId: string, key = `snap-${++seq}`) =>
    app.call({ method: 'POST', path: `/api/jobs/${jobId}/strategy-snapshot`, owner, headers: { 'idempotency-key': key } });
  const readSnapshot = (owner: string, jobId: string) => app.call({ method: 'GET', path: `/api/jobs/${jobId}/strategy-snapshot`, owner });
  const notes = async () => app.db.store.db.selectFrom('ai_workspace_notes').selectAll().execute();

  it.skipIf(skip)('request → 202 with a status URL; a second request while active is the same operation (200); the key replays', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    const first = await requestSnapshot(owner, jobId, 'click-1');
    expect(first.status).toBe(202);
    expect(first.headers.location).toBe(`/api/operations/${first.json.id}`);
    expect(first.json).toMatchObject({ taskType: 'strategy.snapshot', status: 'queued', subject: { type: 'job', id: jobId } });

    const again = await requestSnapshot(owner, jobId, 'click-2');
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
    const replay = await requestSnapshot(owner, jobId, 'click-1');
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json.id).toBe(first.json.id);
    expect(await app.countOperations(owner)).toBe(1);

    // Only the job reference is stored: no job text in the operation row.
    const row = await app.db.store.db.selectFrom('operations').selectAll().where('id', '=', first.json.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ subject_type: 'job', subject_id: jobId, params_json: '{}' });
    expect(JSON.stringify(row)).not.toContain('Secret-ish');
  });

  it.skipIf(skip)('the GET is cache-only: 404 naming the active operation, never new work; 200 with the note once published', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    const none = await readSnapshot(owner, jobId);
    expect(none.status).toBe(404);
    expect(none.json).toMatchObject({ code: 'snapshot_not_found' });
    expect(none.json.statusUrl).toBeUndefined();
    const sentBefore = app.wakeups.sent.length;
    expect(await app.countOperations(owner)).toBe(0);

    const requested = await requestSnapshot(owner, jobId);
    const pending = await readSnapshot(owner, jobId);
    expect(pending.status).toBe(404);
    expect(pending.json.statusUrl).toBe(`/api/operations/${requested.json.id}`);
    expect(await app.countOperations(owner)).toBe(1);
    expect(app.wakeups.sent.length).toBe(sentBefore + 1);

    expect(await processWakeup(worker, () => 60_000)).toBe('succeeded');
    const published = await readSnapshot(owner, jobId);
    expect(published.status).toBe(200);
    expect(published.json).toMatchObject({ jobId, snapshot: SNAPSHOT, operationId: requested.json.id });
    expect(await app.countOperations(owner)).toBe(1);
    // The model saw the job text (rehydrated in the owner scope) and was asked for the schema.
    const call = rig.local.calls[0]?.body as { messages: { content: string }[]; response_format: { type: string } };
    expect(call.messages.at(-1)?.content).toContain('Secret-ish posting text');
    expect(call.response_format.type).toBe('json_schema');
  });

  it.skipIf(skip)('another owner cannot request or read a snapshot of a job that is not theirs (404, nothing written)', async () => {
    const jobId = await createJob(`snap-alice-${++seq}`);
    const bob = `snap-bob-${seq}`;
    expect((await requestSnapshot(bob, jobId)).json).toMatchObject({ status: 404, code: 'job_not_found' });
    expect((await readSnapshot(bob, jobId)).json).toMatchObject({ status: 404, code: 'job_not_found' });
    expect(await app.countOperations(bob)).toBe(0);
  });

  it.skipIf(skip)('concurrent requests for one job with different keys end with one operation', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => requestSnapshot(owner, jobId, `race-${seq}-${i}`)));
    expect(new Set(answers.map((a) => a.json.id)).size).toBe(1);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(await app.countOperations(owner)).toBe(1);
  });

  it.skipIf(skip)('invalid model output publishes no note and fails with invalid_model_output', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    rig.local.respondWith(JSON.stringify({ ...SNAPSHOT, strengths: [] }));
    const requested = await requestSnapshot(owner, jobId);
    expect(await processWakeup(worker, () => 60_000)).toBe('failed');
    const status = await app.call({ method: 'GET', path: `/api/operations/${requested.json.id}`, owner });
    expect(status.json).toMatchObject({ status: 'failed', failure: { code: 'invalid_model_output' } });
    expect((await notes()).filter((n) => n.job_id === jobId)).toHaveLength(0);
    expect((await readSnapshot(owner, jobId)).json.statusUrl).toBeUndefined();
  });

  it.skipIf(skip)('a job gone before the run fails the operation with subject_not_found and no note', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    const requested = await requestSnapshot(owner, jobId);
    await app.db.store.db.deleteFrom('jobs').where('id', '=', jobId).execute();
    expect(await processWakeup(worker, () => 60_000)).toBe('failed');
    const status = await app.call({ method: 'GET', path: `/api/operations/${requested.json.id}`, owner });
    expect(status.json.failure).toEqual({ code: 'subject_not_found' });
    expect(rig.local.calls).toHaveLength(0);
  });

  it.skipIf(skip)('the note exists only with the success: a lost lease publishes nothing, a failed publish leaves the operation running', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    await requestSnapshot(owner, jobId);
    const scope = new WorkerScope(app.db.store);
    const claim = await claimNextOperation(scope, worker);
    if (!claim) throw new Error('nothing claimed');
    const ownerScope = enterOwnerScope(scope, claim);
    const publish = (tx: Parameters<typeof upsertNote>[0]) =>
      upsertNote(tx, { ownerUserId: owner, jobId, noteKind: STRATEGY_SNAPSHOT_NOTE_KIND, contentJson: JSON.stringify(SNAPSHOT), operationId: claim.operationId }).then(() => undefined);

    await expect(completeOperation(ownerScope, claim, { publish: async (tx) => (await publish(tx), Promise.reject(new Error('disk full'))) })).rejects.toThrow('disk full');
    expect((await app.call({ method: 'GET', path: `/api/operations/${claim.operationId}`, owner })).json.status).toBe('running');
    expect((await notes()).filter((n) => n.job_id === jobId)).toHaveLength(0);

    await expect(completeOperation(ownerScope, { ...claim, leaseToken: 'f'.repeat(64) }, { publish })).rejects.toBeInstanceOf(LeaseLostError);
    expect((await notes()).filter((n) => n.job_id === jobId)).toHaveLength(0);

    await completeOperation(ownerScope, claim, { publish });
    expect((await notes()).filter((n) => n.job_id === jobId)).toHaveLength(1);
  });

  it.skipIf(skip)('a new snapshot after a published one replaces the note: still one note per owner, job and kind', async () => {
    const owner = `snap-owner-${++seq}`;
    const jobId = await createJob(owner);
    await requestSnapshot(owner, jobId);
    await processWakeup(worker, () => 60_000);
    rig.local.respondWith(JSON.stringify({ ...SNAPSHOT, summary: 'A second take.' }));
    const second = await requestSnapshot(owner, jobId);
    expect(second.status).toBe(202);
    await processWakeup(worker, () => 60_000);
    const read = await readSnapshot(owner, jobId);
    expect(read.json).toMatchObject({ snapshot: { summary: 'A second take.' }, operationId: second.json.id });
    expect((await notes()).filter((n) => n.job_id === jobId)).toHaveLength(1);
  });

  it('strategy.snapshot is deliberately not on the external allowlist', () => {
    expect(strategySnapshotTask.model?.externalAllowed).not.toBe(true);
  });
});
