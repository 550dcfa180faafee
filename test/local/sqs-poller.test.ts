import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue, type LocalQueueOptions } from '../../lib/local/local-queue.js';
import { SQS_POLLER_DEFAULTS, startSqsPoller, type SqsPoller, type SqsPollerOptions } from '../../lib/local/sqs-poller.js';
import { silentLogger, type Logger } from '../../lib/logger.js';
import { parseWakeupMessage } from '../../lib/queue/wakeup-message.js';
import { SqsWakeupSender } from '../../lib/queue/wakeup-sender.js';
import { waitFor } from '../support/wait-for.js';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(options: LocalQueueOptions = {}): Promise<LocalQueue> {
  const queue = await startLocalQueue({ port: 0, ...options });
  cleanups.push(() => queue.stop());
  return queue;
}

function poll(queue: LocalQueue, options: Partial<SqsPollerOptions> & Pick<SqsPollerOptions, 'handler'>): SqsPoller {
  const poller = startSqsPoller({ client: queue.client, queueUrl: queue.queueUrl, logger: silentLogger, ...options });
  cleanups.push(() => poller.stop());
  return poller;
}

async function sendHints(queue: LocalQueue, operationIds: string[]): Promise<void> {
  await new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl }).send(
    operationIds.map((operationId) => ({ v: 1, reason: 'admitted', operationId })),
  );
}

/** Messages in a queue: visible (waiting) and in flight (received, not yet deleted). */
async function depth(queue: LocalQueue, url: string): Promise<{ visible: number; inFlight: number }> {
  const { Attributes } = await queue.client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  return { visible: Number(Attributes?.ApproximateNumberOfMessages), inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible) };
}

/** Records, per operation id, the ApproximateReceiveCount of every delivery the handler saw. */
function deliveryLog() {
  const seen = new Map<string, string[]>();
  return {
    seen,
    record(record: SQSRecord): string {
      const id = parseWakeupMessage(record.body).operationId ?? '';
      seen.set(id, [...(seen.get(id) ?? []), record.attributes.ApproximateReceiveCount]);
      return id;
    },
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function capturingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return { errors, debug() {}, info() {}, warn() {}, error: (message: string) => void errors.push(message) };
}

describe('startSqsPoller (local SQS event source mapping with ReportBatchItemFailures)', () => {
  it('a failure reported for one record redelivers only it; the others are deleted after one delivery; after maxReceiveCount it moves to the DLQ', async () => {
    const queue = await setup({ maxReceiveCount: 3, visibilityTimeoutSeconds: 1 });
    const log = deliveryLog();
    poll(queue, {
      // Batches of up to 10 (not the default 1), so a failure is reported for one record of several.
      batchSize: 10,
      handler: async (event: SQSEvent): Promise<SQSBatchResponse> => ({
        batchItemFailures: event.Records.filter((r) => log.record(r) === 'poison').map((r) => ({ itemIdentifier: r.messageId })),
      }),
    });

    await sendHints(queue, ['ok-1', 'ok-2', 'poison', 'ok-3', 'ok-4']);
    await waitFor(async () => (await depth(queue, queue.dlqUrl)).visible === 1, { timeoutMs: 20_000, what: 'poison message in the DLQ' });

    expect(log.seen.get('poison')).toEqual(['1', '2', '3']);
    for (const id of ['ok-1', 'ok-2', 'ok-3', 'ok-4']) expect(log.seen.get(id)).toEqual(['1']);
    expect(await depth(queue, queue.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    const { Messages = [] } = await queue.client.send(new ReceiveMessageCommand({ QueueUrl: queue.dlqUrl }));
    expect(Messages.map((m) => parseWakeupMessage(m.Body ?? '').operationId)).toEqual(['poison']);
  });

  it('a handler that throws deletes nothing: the whole batch is redelivered', async () => {
    const queue = await setup({ visibilityTimeoutSeconds: 1 });
    const log = deliveryLog();
    const logger = capturingLogger();
    poll(queue, {
      logger,
      batchSize: 10,
      handler: async (event) => {
        const first = event.Records.some((r) => r.attributes.ApproximateReceiveCount === '1');
        event.Records.forEach((r) => log.record(r));
        if (first) throw new Error('worker crashed');
        return { batchItemFailures: [] };
      },
    });

    await sendHints(queue, ['a', 'b', 'c']);
    await waitFor(() => ['a', 'b', 'c'].every((id) => log.seen.get(id)?.length === 2), { what: 'every message delivered twice' });
    await waitFor(async () => (await depth(queue, queue.queueUrl)).inFlight === 0, { what: 'second deliveries deleted' });

    for (const id of ['a', 'b', 'c']) expect(log.seen.get(id)).toEqual(['1', '2']);
    expect(await depth(queue, queue.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await depth(queue, queue.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(logger.errors).toContain('SQS handler threw; the whole batch will be redelivered');
  });

  it('a response naming a message id that is not in the batch fails the whole batch, as Lambda does', async () => {
    const queue = await setup({ visibilityTimeoutSeconds: 1 });
    const log = deliveryLog();
    poll(queue, {
      batchSize: 10,
      handler: async (event) => {
        const first = event.Records.some((r) => r.attributes.ApproximateReceiveCount === '1');
        event.Records.forEach((r) => log.record(r));
        return first ? { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] } : {};
      },
    });

    await sendHints(queue, ['a', 'b']);
    await waitFor(() => ['a', 'b'].every((id) => log.seen.get(id)?.length === 2), { what: 'every message delivered twice' });
    await waitFor(async () => (await depth(queue, queue.queueUrl)).inFlight === 0, { what: 'second deliveries deleted' });

    for (const id of ['a', 'b']) expect(log.seen.get(id)).toEqual(['1', '2']);
  });

  it('never runs more than maxConcurrentBatches invocations at once, and runs that many concurrently', async () => {
    const queue = await setup({ visibilityTimeoutSeconds: 60 });
    const gate = deferred();
    let active = 0;
    let peak = 0;
    let handled = 0;
    poll(queue, {
      batchSize: 1,
      maxConcurrentBatches: 3,
      handler: async () => {
        active += 1;
        peak = Math.max(peak, active);
        await gate.promise;
        active -= 1;
        handled += 1;
        return {};
      },
    });

    await sendHints(queue, ['1', '2', '3', '4', '5', '6']);
    await waitFor(() => active === 3, { what: 'three concurrent invocations' });
    expect(await depth(queue, queue.queueUrl)).toEqual({ visible: 3, inFlight: 3 });

    gate.resolve();
    await waitFor(() => handled === 6, { what: 'all six handled' });
    expect(peak).toBe(3);
    await waitFor(async () => (await depth(queue, queue.queueUrl)).inFlight === 0, { what: 'all deleted' });
  });

  it('by default hands each invocation one message and runs up to 10 invocations at once, as serverless.yml deploys the worker', async () => {
    expect(SQS_POLLER_DEFAULTS).toMatchObject({ batchSize: 1, maxConcurrentBatches: 10 });
    const queue = await setup({ visibilityTimeoutSeconds: 60 });
    const gate = deferred();
    const batches: number[] = [];
    let active = 0;
    poll(queue, {
      handler: async (event) => {
        batches.push(event.Records.length);
        active += 1;
        await gate.promise;
        active -= 1;
        return {};
      },
    });

    await sendHints(queue, Array.from({ length: 12 }, (_, i) => `default-${i}`));
    await waitFor(() => active === 10, { what: 'ten concurrent invocations' });
    expect(await depth(queue, queue.queueUrl)).toEqual({ visible: 2, inFlight: 10 });
    gate.resolve();
    await waitFor(() => batches.length === 12, { what: 'all twelve handled' });
    expect(new Set(batches)).toEqual(new Set([1]));
    await waitFor(async () => (await depth(queue, queue.queueUrl)).inFlight === 0, { what: 'all deleted' });
  });

  it('stop() stops receiving at once and resolves only after the in-flight invocation finished and was acknowledged', async () => {
    const queue = await setup({ visibilityTimeoutSeconds: 60 });
    const gate = deferred();
    let invocations = 0;
    let finished = false;
    const poller = poll(queue, {
      handler: async () => {
        invocations += 1;
        await gate.promise;
        finished = true;
        return {};
      },
    });

    await sendHints(queue, ['in-flight']);
    await waitFor(() => invocations === 1, { what: 'the invocation to start' });
    let stopped = false;
    const stopping = poller.stop().then(() => {
      stopped = true;
    });
    await sendHints(queue, ['after-stop']); // a real round trip: time enough for stop() to resolve if it did not wait
    expect(stopped).toBe(false);

    gate.resolve();
    await stopping;
    expect(finished).toBe(true);
    expect(invocations).toBe(1);
    const { visible, inFlight } = await depth(queue, queue.queueUrl);
    expect(visible + inFlight).toBe(1);
  });

  it('delivers a Lambda-shaped event and a context whose remaining time counts down from functionTimeoutMs', async () => {
    const queue = await setup({ queueName: 'shape-test' });
    const calls: { record: SQSRecord; remaining: [number, number]; context: Context }[] = [];
    poll(queue, {
      functionTimeoutMs: 5_000,
      handler: async (event, context) => {
        const before = context.getRemainingTimeInMillis();
        for (const record of event.Records) calls.push({ record, remaining: [before, context.getRemainingTimeInMillis()], context });
        return undefined;
      },
    });

    await sendHints(queue, ['shape']);
    await waitFor(() => calls.length === 1, { what: 'one delivery' });

    const [{ record, remaining, context }] = calls as [(typeof calls)[number]];
    expect(record).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:shape-test',
      awsRegion: 'us-east-1',
      body: JSON.stringify({ v: 1, reason: 'admitted', operationId: 'shape' }),
      messageAttributes: {},
    });
    expect(record.messageId).not.toBe('');
    expect(record.receiptHandle).not.toBe('');
    expect(record.attributes.ApproximateReceiveCount).toBe('1');
    expect(Number(record.attributes.SentTimestamp)).toBeGreaterThan(0);
    expect(remaining[0]).toBeGreaterThan(0);
    expect(remaining[0]).toBeLessThanOrEqual(5_000);
    expect(remaining[1]).toBeLessThanOrEqual(remaining[0]);
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor(async () => (await depth(queue, queue.queueUrl)).inFlight === 0, { what: 'the message deleted (undefined response = success)' });
  });

  it.each([
    ['batchSize above the SQS limit of 10', { batchSize: 11 }],
    ['waitTimeSeconds 0 (a busy loop)', { waitTimeSeconds: 0 }],
    ['maxConcurrentBatches 0', { maxConcurrentBatches: 0 }],
    ['functionTimeoutMs above the Lambda maximum of 15 minutes', { functionTimeoutMs: 900_001 }],
  ])('refuses %s', async (_, options) => {
    const queue = await setup();
    expect(() => startSqsPoller({ client: queue.client, queueUrl: queue.queueUrl, handler: async () => ({}), ...options })).toThrow(RangeError);
  });
});
