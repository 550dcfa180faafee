/**
 * Hardening of the AI feature path, from an adversarial review: one active snapshot per job across every path (owner
 * retry, replayed keys), privacy rechecked before an external call, and nothing but configured names and validated
 * Unicode stored or served.
 */
import { createServer, type Server } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { createModelRoutes } from '../../lib/ai/model-routes.js';
import { loadConfig } from '../../lib/config.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { processWakeup, type WorkerDeps } from '../../lib/worker/worker-handler.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import type { ApiTestApp } from '../http/api-test-app.js';
import { useSnapshotSuite } from './snapshot-suite.js';
import type { AiRig } from '../support/ai-rig.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';

const SNAPSHOT = { summary: 'S', strengths: ['a'], risks: [], questionsToAsk: [], nextSteps: ['n'] };
const ACTIVE = ['queued', 'running', 'waiting_for_retry', 'waiting_for_external_fallback'];

describe.each(DIALECTS)('strategy.snapshot hardening on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let rig: AiRig;
  let worker: WorkerDeps;
  let seq = 0;

  const suite = useSnapshotSuite(dialect, skip, SNAPSHOT);
  beforeEach(() => {
    ({ app, rig, worker } = suite);
  });

  const createJob = async (owner: string) => {
    const created = await app.call({ method: 'POST', path: '/api/jobs', owner, body: { title: 'SRE', company: 'Acme', description: 'JOBTEXT-MARKER posting' } });
    return created.json.id as string;
  };
  const requestSnapshot = (owner: string, jobId: string, key: string) =>
    app.call({ method: 'POST', path: `/api/jobs/${jobId}/strategy-snapshot`, owner, headers: { 'idempotency-key': key } });
  const activeFor = async (jobId: string) =>
    (await app.db.store.db.selectFrom('operations').select(['id', 'status']).where('subject_id', '=', jobId).execute()).filter((r) => ACTIVE.includes(r.status));

  it.skipIf(skip)('an owner retry of a cancelled snapshot while another is active is refused (409 subject_busy): one active operation per job', async () => {
    const owner = `rv-${++seq}`;
    const jobId = await createJob(owner);
    const first = await requestSnapshot(owner, jobId, `a-${seq}`);
    expect((await app.call({ method: 'POST', path: `/api/operations/${first.json.id}/cancel`, owner })).json.status).toBe('cancelled');
    const second = await requestSnapshot(owner, jobId, `b-${seq}`);
    expect(second.status).toBe(202);
    const retry = await app.call({ method: 'POST', path: `/api/operations/${first.json.id}/retry`, owner });
    expect(retry.json).toMatchObject({ status: 409, code: 'subject_busy', statusUrl: `/api/operations/${second.json.id}` });
    expect(await activeFor(jobId)).toHaveLength(1);
    // Once the other one is over, the retry goes through.
    await app.call({ method: 'POST', path: `/api/operations/${second.json.id}/cancel`, owner });
    expect((await app.call({ method: 'POST', path: `/api/operations/${first.json.id}/retry`, owner })).status).toBe(202);
    expect(await activeFor(jobId)).toHaveLength(1);
  });

  it.skipIf(skip)('the generic admission route applies the same rules: the job subject type only, the owner\'s job only, reuse of the active one', async () => {
    const owner = `rv-${++seq}`;
    const jobId = await createJob(owner);
    const admit = (subject: { type: string; id: string }, key: string) =>
      app.call({ method: 'POST', path: '/api/operations', owner, headers: { 'idempotency-key': key }, body: { taskType: 'strategy.snapshot', subject } });
    expect((await admit({ type: 'doc', id: jobId }, `g1-${seq}`)).json).toMatchObject({ status: 400, code: 'validation_failed' });
    expect((await admit({ type: 'job', id: '00000000-0000-4000-8000-000000000000' }, `g2-${seq}`)).json).toMatchObject({ status: 404, code: 'job_not_found' });
    const otherJob = await createJob(`rv-other-${seq}`);
    expect((await admit({ type: 'job', id: otherJob }, `g3-${seq}`)).json).toMatchObject({ status: 404, code: 'job_not_found' });
    expect(await app.countOperations(owner)).toBe(0);
    const viaFeature = await requestSnapshot(owner, jobId, `g4-${seq}`);
    const viaGeneric = await admit({ type: 'job', id: jobId }, `g5-${seq}`);
    expect(viaGeneric.status).toBe(200);
    expect(viaGeneric.json.id).toBe(viaFeature.json.id);
  });

  it.skipIf(skip)('a key answered with a reused operation replays that operation later, instead of starting new work', async () => {
    const owner = `rv-${++seq}`;
    const jobId = await createJob(owner);
    const first = await requestSnapshot(owner, jobId, `k1-${seq}`);
    const second = await requestSnapshot(owner, jobId, `k2-${seq}`);
    expect(second.json.id).toBe(first.json.id);
    expect(await processWakeup(worker, () => 60_000)).toBe('succeeded');
    // The client that sent k2 lost its answer and retries the same click with the same key.
    const retried = await requestSnapshot(owner, jobId, `k2-${seq}`);
    expect(retried.json.id).toBe(first.json.id);
    expect(await app.countOperations(owner)).toBe(1);
  });

  it.skipIf(skip)('a key bound to a reused operation is forgotten with it when the sweeper purges it after the retention', async () => {
    const owner = `rv-${++seq}`;
    const jobId = await createJob(owner);
    const first = await requestSnapshot(owner, jobId, `pa-${seq}`);
    await requestSnapshot(owner, jobId, `pb-${seq}`);
    const aliases = () => app.db.store.db.selectFrom('operation_key_aliases').select('operation_id').where('owner_user_id', '=', owner).execute();
    expect(await aliases()).toEqual([{ operation_id: first.json.id }]);
    expect(await processWakeup(worker, () => 60_000)).toBe('succeeded');
    app.db.clock.advance(worker.policy.retentionMs + 1);
    const counts = await runSweepOnce({ ...worker, batchSize: 100, timeBudgetMs: 10_000 });
    expect(counts.purged).toBe(1);
    expect(await aliases()).toEqual([]);
    app.db.clock.offsetMs = 0;
  });

  it.skipIf(skip)('model output with a lone surrogate is invalid output: nothing published, nothing served', async () => {
    const owner = `rv-${++seq}`;
    const jobId = await createJob(owner);
    rig.local.respondWith(JSON.stringify(SNAPSHOT).replace('"S"', '"S\\ud800x"'));
    await requestSnapshot(owner, jobId, `s-${seq}`);
    const outcome = await processWakeup(worker, () => 60_000);
    const read = await app.call({ method: 'GET', path: `/api/jobs/${jobId}/strategy-snapshot`, owner });
    expect(read.text).not.toMatch(/\\ud800/i);
    expect(outcome).toBe('failed');
  });

  it.skipIf(skip)('provenance stores the configured model name, never the one the endpoint reports (it can echo the prompt)', async () => {
    // An endpoint that names its model after the prompt it received (or echoes a header): any string up to 64 chars.
    const echo: Server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const prompt = (JSON.parse(body) as { messages: { content: string }[] }).messages.at(-1)?.content ?? '';
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ model: prompt.slice(prompt.indexOf('JOBTEXT')), choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(SNAPSHOT) } }] }));
      });
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()));
    const port = (echo.address() as { port: number }).port;
    const models = createModelRoutes(loadConfig({ MODEL_LOCAL_URL: `http://127.0.0.1:${port}/v1`, MODEL_LOCAL_NAME: 'configured-local' }));
    try {
      const owner = `rv-${++seq}`;
      const jobId = await createJob(owner);
      const requested = await requestSnapshot(owner, jobId, `p-${seq}`);
      expect(await processWakeup({ ...worker, models }, () => 60_000)).toBe('succeeded');
      const row = await app.db.store.db.selectFrom('operations').selectAll().where('id', '=', requested.json.id).executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain('JOBTEXT-MARKER');
    } finally {
      models.close();
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
  });

  it.skipIf(skip)('an owner who switches to local_only before the external claim is never sent external (docs/design.md §5 rechecks privacy)', async () => {
    const scope = new OwnerScope(app.db.store, `rv-${++seq}`);
    await updateOwnSettings(scope, { privacyMode: 'external_allowed' });
    const deps = rig.deps;
    const op = (await admitOperation(scope, deps, `x-${seq}`, { taskType: 'test.ai-fallback', subject: { type: 'test', id: 'x' } })).operation;
    rig.local.fail(503);
    expect(await processWakeup(deps, () => 60_000)).toBe('waiting_for_external_fallback');
    // The owner withdraws consent while the operation waits for the external route.
    await updateOwnSettings(scope, { privacyMode: 'local_only' });
    await processWakeup(deps, () => 60_000);
    expect(rig.external.calls).toHaveLength(0);
    expect((await getOperation(scope, op.id)).status).not.toBe('succeeded');
  });
});
