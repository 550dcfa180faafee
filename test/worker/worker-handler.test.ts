import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { createWorkerHandler, type WorkerDeps } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { lambdaContext, sqsRecord, wakeupEvent } from '../support/sqs-events.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

describe.each(DIALECTS)('SQS worker handler on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let deps: WorkerDeps & ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let handler: ReturnType<typeof createWorkerHandler>;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(() => {
    if (skip) return;
    t.clock.offsetMs = 0;
    deps = { ...testDeps({ heartbeatMs: 100 }), store: t.store };
    owner = new OwnerScope(t.store, `worker-owner-${++seq}`);
    handler = createWorkerHandler(deps);
  });

  const admitDemo = async (params: Record<string, unknown>) =>
    (await admitOperation(owner, deps, `k-${seq}-${JSON.stringify(params).length}-${Math.random()}`, {
      taskType: 'demo.wait',
      subject: { type: 'demo', id: 'x' },
      params,
    })).operation;
  const invoke = (event = wakeupEvent(), context = lambdaContext()) => handler(event, context);

  it.skipIf(skip)('a wake-up runs demo.wait to succeeded with progress 100 and no batch item failure', async () => {
    const op = await admitDemo({ durationMs: 30 });
    expect(await invoke()).toEqual({ batchItemFailures: [] });
    expect(await getOperation(owner, op.id)).toMatchObject({ status: 'succeeded', attempt: 1, progress_percent: 100 });
  });

  it.skipIf(skip)('a retryable failure waits with backoff and a delayed wake-up, then succeeds on attempt 2', async () => {
    const op = await admitDemo({ durationMs: 0, failAttempts: 1 });
    await invoke();
    const waiting = await getOperation(owner, op.id);
    expect(waiting.status).toBe('waiting_for_retry');
    expect(deps.wakeups.sent.at(-1)).toMatchObject({ message: { reason: 'retry', operationId: op.id }, delaySeconds: 4 });
    await invoke();
    expect((await getOperation(owner, op.id)).status).toBe('waiting_for_retry');
    t.clock.advance(3_751);
    await invoke();
    expect(await getOperation(owner, op.id)).toMatchObject({ status: 'succeeded', attempt: 2 });
  });

  it.skipIf(skip)('a permanent failure fails at once with permanent_error', async () => {
    const op = await admitDemo({ durationMs: 0, permanentFailure: true });
    await invoke();
    expect(await getOperation(owner, op.id)).toMatchObject({ status: 'failed', attempt: 1, failure_code: 'permanent_error' });
  });

  it.skipIf(skip)('an owner cancel reaches a running task within one heartbeat and ends cancelled', async () => {
    const op = await admitDemo({ durationMs: 600_000 });
    const running = invoke();
    await waitFor(async () => (await getOperation(owner, op.id)).status === 'running', { what: 'running' });
    const requested = await cancelOperation(owner, op.id);
    expect(requested.cancel_requested_at).not.toBeNull();
    expect(await running).toEqual({ batchItemFailures: [] });
    expect(await getOperation(owner, op.id)).toMatchObject({ status: 'cancelled', lease_token: null });
  });

  it.skipIf(skip)('a task that outlives its time budget fails retryably with a timeout, below the Lambda remaining time', async () => {
    const op = await admitDemo({ durationMs: 600_000 });
    await invoke(wakeupEvent(), lambdaContext(5_300));
    const row = await getOperation(owner, op.id);
    expect(row.status).toBe('waiting_for_retry');
    expect(row.failure_message).toMatch(/timed out/);
    // its retry would wait 10 minutes for real: take it out of the later tests' way
    await cancelOperation(owner, op.id);
  });

  it.skipIf(skip)('a handler that ignores its abort signal cannot hold the lease past its timeout or a cancel', async () => {
    const stubborn = async (key: string) =>
      (await admitOperation(owner, deps, key, { taskType: 'test.stubborn', subject: { type: 'demo', id: 'x' }, params: { durationMs: 20_000 } })).operation;
    const timedOut = await stubborn(`stubborn-timeout-${seq}`);
    const started = Date.now();
    await invoke();
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(await getOperation(owner, timedOut.id)).toMatchObject({ status: 'waiting_for_retry', lease_token: null });

    const cancelled = await stubborn(`stubborn-cancel-${seq}`);
    const running = invoke(wakeupEvent(), lambdaContext());
    await waitFor(async () => (await getOperation(owner, cancelled.id)).status === 'running', { what: 'running' });
    await cancelOperation(owner, cancelled.id);
    await running;
    expect((await getOperation(owner, cancelled.id)).status).toBe('cancelled');
    // the timed-out one waits for a retry of a handler that sleeps 20 s: take it out of the later tests' way
    await cancelOperation(owner, timedOut.id);
  });

  it.skipIf(skip)('a malformed message is a batch item failure while the rest of the batch is handled', async () => {
    const op = await admitDemo({ durationMs: 0 });
    const bad = sqsRecord('{not json');
    const good = sqsRecord(JSON.stringify({ v: 1, reason: 'admitted' }));
    expect(await invoke({ Records: [bad, good] })).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });
    expect((await getOperation(owner, op.id)).status).toBe('succeeded');
  });

  it.skipIf(skip)('a wake-up with nothing eligible is consumed without failure', async () => {
    expect(await invoke(wakeupEvent(3))).toEqual({ batchItemFailures: [] });
  });
});
