import { ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { reconcileRedrive } from '../../lib/queue/reconcile-redrive.js';
import { redriveDeadLetters, type RedriveInput } from '../../lib/queue/redrive-dlq.js';
import { createSqsClient } from '../../lib/queue/wakeup-sender.js';
import { loadVerifiedChain } from '../../lib/recovery/chain-verification.js';
import { NothingToTakeOverError } from '../../lib/recovery/recovery-errors.js';
import { findRecoveryByKey, listCheckpoints } from '../../lib/recovery/recovery.repository.js';
import { takeOverRecoveryOperation } from '../../lib/recovery/take-over-recovery-operation.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

const LEASE_MS = 10_000;

/** A client whose `commandName` calls fail with `error` before reaching SQS (the request is never sent). */
function failingClient(queue: LocalQueue, commandName: string, error: () => Error): SQSClient {
  const client = createSqsClient({ region: 'us-east-1', endpoint: queue.endpoint });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === commandName) throw error();
      return next(args);
    },
    { step: 'initialize', name: 'injectFailure' },
  );
  return client;
}

/** Every message visible on `queueUrl` now (receives until a page comes back empty). */
async function receiveAll(client: SQSClient, queueUrl: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
    );
    if (Messages.length === 0) return all;
    all.push(...Messages);
  }
}

describe.each(DIALECTS)('DLQ redrive through the recovery ledger on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let q: LocalQueue;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    t.clock.offsetMs = 0;
    q = await startLocalQueue({ queueName: `redrive-${++seq}` });
  });
  afterEach(async () => q?.stop());

  const redrive = (overrides: Partial<RedriveInput> = {}) =>
    redriveDeadLetters({ client: q.client, store: t.store, dlqUrl: q.dlqUrl, queueUrl: q.queueUrl, leaseOwner: 'redrive-test', leaseMs: LEASE_MS, ...overrides });
  const deadLetter = async (body: string) => {
    const sent = await q.client.send(
      new SendMessageCommand({ QueueUrl: q.dlqUrl, MessageBody: body, MessageAttributes: { origin: { DataType: 'String', StringValue: 'test' } } }),
    );
    return sent.MessageId as string;
  };
  const operation = async (dlqMessageId: string) => {
    const row = await findRecoveryByKey(t.store, 'queue.redrive', `redrive:${dlqMessageId}`);
    if (!row) throw new Error(`no ledger operation for ${dlqMessageId}`);
    return row;
  };
  const checkpoints = (operationId: string) => listCheckpoints(t.store, operationId);

  it.skipIf(skip)('dead letters go back to the main queue once each; the ledger shows succeeded with a verifying chain and no body', async () => {
    const bodies = [`{"v":1,"reason":"retry","operationId":"body-${seq}-a"}`, `{"v":1,"reason":"retry","operationId":"body-${seq}-b"}`];
    const ids = [await deadLetter(bodies[0] as string), await deadLetter(bodies[1] as string)];

    expect(await redrive()).toEqual({ moved: 2, skipped: 0, rejected: 0 });

    const main = await receiveAll(q.client, q.queueUrl);
    expect(main.map((m) => m.Body).sort()).toEqual([...bodies].sort());
    expect(main.every((m) => m.MessageAttributes?.origin?.StringValue === 'test')).toBe(true);
    expect(await receiveAll(q.client, q.dlqUrl)).toEqual([]);
    for (const id of ids) {
      const row = await operation(id);
      expect(row).toMatchObject({ state: 'succeeded', effect_class: 'forward_only', kind: 'send_message', lease_owner: null });
      expect(JSON.parse(row.recovery_plan)).toEqual({ check: 'main_queue_message', dlqMessageId: id });
      const chain = await checkpoints(row.id);
      expect(chain.map((c) => [c.kind, c.state])).toEqual([
        ['begin', 'running'],
        ['sent', 'running'],
        ['completed', 'succeeded'],
      ]);
      const completed = JSON.parse(chain[2]?.evidence ?? '{}') as Record<string, unknown>;
      expect(completed).toMatchObject({ checks: ['sent', 'dlq_deleted'], 'dlq_deleted.dlqMessageId': id });
      expect(main.map((m) => m.MessageId)).toContain(completed['sent.sentMessageId']);
      expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
      const stored = JSON.stringify([row, chain]);
      for (const body of bodies) expect(stored).not.toContain(body.slice(1, -1));
    }
  });

  it.skipIf(skip)('a crash between the send and the DLQ delete: later runs skip the dead letter (no second send); takeover → outcome_unknown; the sent checkpoint resolves it', async () => {
    const body = `{"v":1,"reason":"retry","operationId":"crash-${seq}"}`;
    const id = await deadLetter(body);
    const crashing = failingClient(q, 'DeleteMessageCommand', () => new Error('process died before DeleteMessage'));
    await expect(redrive({ client: crashing, visibilityTimeoutSeconds: 1 })).rejects.toThrow('process died');
    crashing.destroy();
    const row = await operation(id);
    expect(row.state).toBe('running');
    expect((await checkpoints(row.id)).map((c) => c.kind)).toEqual(['begin', 'sent']);

    // The dead letter reappears after its 1 s visibility timeout; every later run skips it.
    const second = await waitFor(
      async () => {
        const counts = await redrive({ visibilityTimeoutSeconds: 1 });
        return counts.skipped === 1 ? counts : undefined;
      },
      { what: 'the dead letter to reappear and be skipped' },
    );
    expect(second).toEqual({ moved: 0, skipped: 1, rejected: 0 });
    const main = await receiveAll(q.client, q.queueUrl);
    expect(main.map((m) => m.Body)).toEqual([body]);

    await expect(reconcileRedrive({ store: t.store, operationId: row.id, leaseOwner: 'reconciler', leaseMs: LEASE_MS })).rejects.toBeInstanceOf(NothingToTakeOverError);
    t.clock.advance(LEASE_MS + 1);
    expect(await reconcileRedrive({ store: t.store, operationId: row.id, leaseOwner: 'reconciler', leaseMs: LEASE_MS })).toBe('succeeded');
    const chain = await checkpoints(row.id);
    expect(chain.map((c) => [c.kind, c.state])).toEqual([
      ['begin', 'running'],
      ['sent', 'running'],
      ['takeover', 'outcome_unknown'],
      ['resolved_occurred', 'succeeded'],
    ]);
    expect(chain[2]).toMatchObject({ fence: 2, previous_fence: 1 });
    expect(JSON.parse(chain[3]?.evidence ?? '{}')).toMatchObject({ checks: ['sent'], 'sent.sentMessageId': main[0]?.MessageId, 'sent.checkpointSeq': 1 });
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });

    // Resolved, the key stays spent: the dead letter is still skipped, never sent again.
    await waitFor(async () => (await redrive({ visibilityTimeoutSeconds: 1 })).skipped === 1, { what: 'a third run to skip it' });
    expect(await receiveAll(q.client, q.queueUrl)).toEqual([]);
  });

  it.skipIf(skip)('a send with no answer from SQS stays outcome_unknown after takeover: nothing proves it either way', async () => {
    const id = await deadLetter(`{"v":1,"reason":"retry","operationId":"lost-${seq}"}`);
    const noAnswer = failingClient(q, 'SendMessageCommand', () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    await expect(redrive({ client: noAnswer })).rejects.toThrow('socket hang up');
    noAnswer.destroy();
    const row = await operation(id);
    expect((await checkpoints(row.id)).map((c) => c.kind)).toEqual(['begin']);
    t.clock.advance(LEASE_MS + 1);
    expect(await reconcileRedrive({ store: t.store, operationId: row.id, leaseOwner: 'reconciler', leaseMs: LEASE_MS })).toBe('outcome_unknown');

    // An operator who checked the worker's logs resolves it by hand.
    t.clock.advance(LEASE_MS + 1);
    const taken = await takeOverRecoveryOperation(t.store, { operationId: row.id, leaseOwner: 'operator', leaseMs: LEASE_MS });
    expect(taken.state).toBe('outcome_unknown');
    await taken.resolveUnknown({ occurred: false, verification: { checks: [{ name: 'worker_log', evidence: { messagesSeen: 0 } }] } });
    expect((await operation(id)).state).toBe('verified_recovered');
    expect(await loadVerifiedChain(t.store, row.id)).toEqual({ ok: true });
  });

  it.skipIf(skip)('SQS refusing the send (4xx) records rejected and leaves the dead letter in the DLQ', async () => {
    const id = await deadLetter(`{"v":1,"reason":"retry","operationId":"refused-${seq}"}`);
    expect(await redrive({ queueUrl: `${q.queueUrl}-missing`, maxMessages: 1, visibilityTimeoutSeconds: 0 })).toEqual({ moved: 0, skipped: 0, rejected: 1 });
    const row = await operation(id);
    expect(row.state).toBe('rejected');
    const last = (await checkpoints(row.id)).at(-1);
    expect(JSON.parse(last?.evidence ?? '{}')).toMatchObject({ dlqMessageId: id, resultCode: 'QueueDoesNotExist', httpStatus: 400 });
    expect((await receiveAll(q.client, q.dlqUrl)).map((m) => m.MessageId)).toEqual([id]);
    expect(await receiveAll(q.client, q.queueUrl)).toEqual([]);
  });

  it.skipIf(skip)('a run is bounded by maxMessages', async () => {
    for (let i = 0; i < 12; i += 1) await deadLetter(`{"v":1,"reason":"retry","operationId":"bound-${seq}-${i}"}`);
    expect(await redrive({ maxMessages: 11 })).toEqual({ moved: 11, skipped: 0, rejected: 0 });
    expect(await redrive()).toEqual({ moved: 1, skipped: 0, rejected: 0 });
    expect(await receiveAll(q.client, q.queueUrl)).toHaveLength(12);
  });
});
