import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseModelAttempts } from '../../lib/ai/model-provenance.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { AnswerSchema, EXTERNAL_KEY, startAiRig, VALID_ANSWER, type AiRig } from '../support/ai-rig.js';
import { testRegistry } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

describe.each(DIALECTS)('local-first model routing on %s', (dialect) => {
  // The MariaDB cases need a reachable server: CI has one, and the global setup starts one when mariadbd is installed;
  // only a machine with neither skips them (SQLite always runs).
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let rig: AiRig;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    // Each test starts from an empty table, so a claim only ever sees this test's operations.
    await t.store.db.deleteFrom('capacity_slots').execute();
    await t.store.db.deleteFrom('owner_capacity').execute();
    await t.store.db.deleteFrom('operation_notifications').execute();
    await t.store.db.deleteFrom('operations').execute();
    t.clock.offsetMs = 0;
    rig = await startAiRig(t.store, { breakerFailures: 2, cooldownSeconds: 30, requestTimeoutMs: 1_000 });
  });
  afterEach(async () => rig?.close());

  const owner = async (privacyMode: 'local_only' | 'external_allowed') => {
    const scope = new OwnerScope(t.store, `ai-owner-${++seq}`);
    await updateOwnSettings(scope, { privacyMode });
    return scope;
  };
  const admit = async (scope: OwnerScope, taskType: string) =>
    (await admitOperation(scope, rig.deps, `key-${++seq}`, { taskType, subject: { type: 'test', id: String(seq) } })).operation;
  const work = () => processWakeup(rig.deps, () => 60_000);
  /** Runs wake-ups until one finds nothing to claim, moving the database clock past retry delays and the breakers' past cool-downs. */
  const drain = async () => {
    for (let i = 0; i < 20; i++) {
      if ((await work()) === 'idle') {
        t.clock.advance(120_000);
        rig.advanceBreakerClock(60_000);
        if ((await work()) === 'idle') return;
      }
    }
    throw new Error('the queue did not drain');
  };

  it.skipIf(skip)('a local_only owner never reaches the external route, whatever the local route does', async () => {
    const scope = await owner('local_only');
    const failing = await admit(scope, 'test.ai-fallback');
    rig.local.fail(503);
    await drain();
    expect(await getOperation(scope, failing.id)).toMatchObject({ status: 'failed', failure_code: 'retries_exhausted', attempt: 3 });

    rig.advanceBreakerClock(60_000);
    rig.local.invalidJson();
    const garbled = await admit(scope, 'test.ai-fallback');
    await drain();
    expect((await getOperation(scope, garbled.id)).status).toBe('failed');

    rig.advanceBreakerClock(60_000);
    rig.local.respondWith(VALID_ANSWER);
    const fine = await admit(scope, 'test.ai-fallback');
    await drain();
    expect((await getOperation(scope, fine.id)).status).toBe('succeeded');

    expect(rig.local.calls.length).toBeGreaterThanOrEqual(5);
    expect(rig.external.calls).toHaveLength(0);
    const routes = parseModelAttempts((await getOperation(scope, failing.id)).model_attempts).map((a) => a.route);
    expect(routes).toEqual(['local', 'local', 'local']);
  });

  it.skipIf(skip)('an external_allowed owner on an allow-listed task falls back to the external route after a local failure', async () => {
    const scope = await owner('external_allowed');
    const op = await admit(scope, 'test.ai-fallback');
    rig.local.fail(503);
    expect(await work()).toBe('waiting_for_external_fallback');
    expect(await getOperation(scope, op.id)).toMatchObject({ status: 'waiting_for_external_fallback', attempt: 1 });
    expect(rig.deps.wakeups.sent.at(-1)?.message).toMatchObject({ operationId: op.id });

    expect(await work()).toBe('succeeded');
    const done = await getOperation(scope, op.id);
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(parseModelAttempts(done.model_attempts)).toEqual([
      { attempt: 1, route: 'local', provider: 'http', model: 'local-test-model', outcome: 'server_error' },
      { attempt: 2, route: 'external', provider: 'http', model: 'external-test-model', outcome: 'ok' },
    ]);
    expect(rig.local.calls).toHaveLength(1);
    expect(rig.external.calls).toHaveLength(1);
    // The key goes to the external route only, as a Bearer token.
    expect(rig.external.calls[0]?.headers.authorization).toBe(`Bearer ${EXTERNAL_KEY}`);
    expect(rig.local.calls[0]?.headers.authorization).toBeUndefined();
  });

  it.skipIf(skip)('a task type off the external allowlist retries locally even for an external_allowed owner', async () => {
    const scope = await owner('external_allowed');
    const op = await admit(scope, 'test.ai-local');
    rig.local.fail(500);
    expect(await work()).toBe('waiting_for_retry');
    expect((await getOperation(scope, op.id)).status).toBe('waiting_for_retry');
    expect(rig.external.calls).toHaveLength(0);
  });

  it.skipIf(skip)('a permanent local failure (4xx) does not fall back: the operation fails as model_rejected', async () => {
    const scope = await owner('external_allowed');
    const op = await admit(scope, 'test.ai-fallback');
    rig.local.fail(400);
    expect(await work()).toBe('failed');
    expect(await getOperation(scope, op.id)).toMatchObject({ status: 'failed', failure_code: 'model_rejected' });
    expect(rig.external.calls).toHaveLength(0);
  });

  it.skipIf(skip)('after N local failures the breaker opens, further operations wait with their attempts unspent, and a half-open success closes it', async () => {
    const scope = await owner('local_only');
    const first = await admit(scope, 'test.ai-local');
    const second = await admit(scope, 'test.ai-local');
    const waiting = await admit(scope, 'test.ai-local');
    rig.local.fail(503);
    expect(await work()).toBe('waiting_for_retry');
    expect(await work()).toBe('waiting_for_retry');
    expect(rig.models.local?.breaker.state).toBe('open');

    // Open: nothing of the route is claimed, even once the retries are due; no attempt is spent.
    t.clock.advance(120_000);
    expect(await work()).toBe('idle');
    expect(rig.local.calls).toHaveLength(2);
    expect(await getOperation(scope, waiting.id)).toMatchObject({ status: 'queued', attempt: 0 });

    // Cool-down passed: one trial goes through; its success closes the breaker and the rest run.
    rig.local.respondWith(VALID_ANSWER);
    rig.advanceBreakerClock(30_000);
    expect(rig.models.local?.breaker.state).toBe('half_open');
    expect(await work()).toBe('succeeded');
    expect(rig.models.local?.breaker.state).toBe('closed');
    await drain();
    for (const op of [first, second, waiting]) expect((await getOperation(scope, op.id)).status).toBe('succeeded');
    expect((await getOperation(scope, waiting.id)).attempt).toBe(1);
  });

  it.skipIf(skip)('a failed half-open trial re-opens the breaker for another cool-down', async () => {
    const scope = await owner('local_only');
    await admit(scope, 'test.ai-local');
    await admit(scope, 'test.ai-local');
    const third = await admit(scope, 'test.ai-local');
    rig.local.fail(503);
    await work();
    await work();
    rig.advanceBreakerClock(30_000);
    expect(await work()).toBe('waiting_for_retry');
    expect(rig.models.local?.breaker.state).toBe('open');
    expect(await work()).toBe('idle');
    expect((await getOperation(scope, third.id)).attempt).toBeLessThanOrEqual(1);
  });

  it.skipIf(skip)('a half-open trial whose run ends before any model call is given back, so the route is not stuck open', async () => {
    const scope = await owner('local_only');
    await admit(scope, 'test.ai-local');
    await admit(scope, 'test.ai-local');
    rig.local.fail(503);
    await work();
    await work();
    rig.local.respondWith(VALID_ANSWER);
    rig.advanceBreakerClock(30_000);
    // The trial goes to an operation whose owner has since turned AI off: it fails before calling the model.
    const revoked = await admit(scope, 'test.ai-entitled');
    await t.store.db.updateTable('operations').set({ priority: 100 }).where('id', '=', revoked.id).execute();
    await updateOwnSettings(scope, { aiEnabled: false });
    expect(await work()).toBe('failed');
    expect((await getOperation(scope, revoked.id)).failure_code).toBe('entitlement_revoked');
    expect(rig.models.local?.breaker.state).toBe('half_open');
    // The next claim gets the trial; its success closes the breaker.
    t.clock.advance(120_000);
    expect(await work()).toBe('succeeded');
    expect(rig.models.local?.breaker.state).toBe('closed');
  });

  it.skipIf(skip)('invalid model output publishes nothing and fails with the bounded code invalid_model_output', async () => {
    const scope = await owner('external_allowed');
    const op = await admit(scope, 'test.ai-fallback');
    rig.local.respondWith('{"answer": 42}');
    expect(await work()).toBe('failed');
    const row = await getOperation(scope, op.id);
    expect(row).toMatchObject({ status: 'failed', failure_code: 'invalid_model_output' });
    expect(parseModelAttempts(row.model_attempts).map((a) => a.outcome)).toEqual(['invalid_output']);
    expect(rig.external.calls).toHaveLength(0);
  });

  it.skipIf(skip)('a model that hangs ends as a timeout within the task timeout and counts against the route', async () => {
    const scope = await owner('local_only');
    const op = await admit(scope, 'test.ai-local');
    rig.local.hang();
    const started = Date.now();
    expect(await work()).toBe('waiting_for_retry');
    // The request timeout (1 s) ends it well inside the task timeout (3 s).
    expect(Date.now() - started).toBeLessThan(3_000);
    const row = await getOperation(scope, op.id);
    expect(parseModelAttempts(row.model_attempts).map((a) => a.outcome)).toEqual(['timeout']);
    await waitFor(() => rig.local.abortedRequests === 1, { what: 'the hung request to be aborted' });
  });

  it.skipIf(skip)('an owner cancel during inference aborts the HTTP request and ends cancelled', async () => {
    const scope = await owner('local_only');
    const longTimeout = await startAiRig(t.store, { requestTimeoutMs: 60_000 });
    try {
      longTimeout.local.hang();
      const op = await admitOperation(scope, longTimeout.deps, `cancel-${++seq}`, { taskType: 'test.ai-local', subject: { type: 'test', id: 'c' } });
      const running = processWakeup(longTimeout.deps, () => 60_000);
      await waitFor(() => longTimeout.local.calls.length === 1, { what: 'the model request to arrive' });
      await cancelOperation(scope, op.operation.id);
      expect(await running).toBe('cancelled');
      await waitFor(() => longTimeout.local.abortedRequests === 1, { what: 'the request to be aborted' });
      const row = await getOperation(scope, op.operation.id);
      expect(row.status).toBe('cancelled');
      expect(parseModelAttempts(row.model_attempts).map((a) => a.outcome)).toEqual(['aborted']);
      expect(longTimeout.models.local?.breaker.state).toBe('closed');
    } finally {
      await longTimeout.close();
    }
  });

  it.skipIf(skip)('a cancel is cooperative: a model call that answers before the next heartbeat completes the operation (succeeded, cancelRequested kept)', async () => {
    // A lease of 60 s beats every 15 s: the answer (3 s after the request arrives) comes long before the first beat.
    const shortCall = defineTask({
      type: 'test.ai-short-call',
      paramsSchema: z.strictObject({}),
      timeoutMs: 30_000,
      leaseSeconds: 60,
      model: { externalAllowed: false },
      async run({ model }) {
        await model?.requestStructured({ messages: [{ role: 'user', content: 'Say hi.' }], schema: AnswerSchema, schemaName: 'answer' });
      },
    });
    const patient = await startAiRig(t.store, { requestTimeoutMs: 60_000 });
    try {
      const deps = { ...patient.deps, registry: testRegistry().register(shortCall), policy: { ...patient.deps.policy, heartbeatMs: 60_000 } };
      const scope = await owner('local_only');
      patient.local.slow(3_000);
      const op = (await admitOperation(scope, deps, `short-${++seq}`, { taskType: 'test.ai-short-call', subject: { type: 'test', id: 's' } })).operation;
      const running = processWakeup(deps, () => 60_000);
      await waitFor(() => patient.local.calls.length === 1, { what: 'the model request to arrive' });
      expect(await cancelOperation(scope, op.id)).toMatchObject({ status: 'running', cancel_requested_at: expect.anything() });
      expect(await running).toBe('succeeded');
      const row = await getOperation(scope, op.id);
      expect(row).toMatchObject({ status: 'succeeded', cancel_requested_at: expect.anything() });
      expect(parseModelAttempts(row.model_attempts).map((a) => a.outcome)).toEqual(['ok']);
      expect(patient.local.abortedRequests).toBe(0);
    } finally {
      await patient.close();
    }
  });
});
