import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/errors.js';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { parseWakeupMessage, type WakeupMessage } from '../../lib/queue/wakeup-message.js';
import { SqsWakeupSender } from '../../lib/queue/wakeup-sender.js';
import { waitFor } from '../support/wait-for.js';

let queue: LocalQueue;

beforeAll(async () => {
  queue = await startLocalQueue({ port: 0, queueName: 'wakeup-sender-test' });
});

afterAll(async () => {
  await queue?.stop();
});

/** Receives and deletes until `count` bodies have arrived. */
async function drain(count: number): Promise<string[]> {
  const bodies: string[] = [];
  await waitFor(
    async () => {
      const { Messages = [] } = await queue.client.send(
        new ReceiveMessageCommand({ QueueUrl: queue.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const message of Messages) {
        bodies.push(message.Body ?? '');
        await queue.client.send(new DeleteMessageCommand({ QueueUrl: queue.queueUrl, ReceiptHandle: message.ReceiptHandle }));
      }
      return bodies.length >= count;
    },
    { what: `${count} messages` },
  );
  return bodies;
}

async function visibleCount(): Promise<number> {
  const { Attributes } = await queue.client.send(
    new GetQueueAttributesCommand({ QueueUrl: queue.queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesDelayed);
}

describe('SqsWakeupSender', () => {
  it('sends 25 hints (more than one SQS batch of 10) and every one arrives exactly once, parseable', async () => {
    const sender = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    const sent: WakeupMessage[] = Array.from({ length: 25 }, (_, i) => ({ v: 1, reason: 'admitted', operationId: `op-${i}` }));

    await sender.send(sent);

    const received = (await drain(25)).map(parseWakeupMessage);
    expect(received.map((m) => m.operationId).sort()).toEqual(sent.map((m) => m.operationId).sort());
    expect(await visibleCount()).toBe(0);
  });

  it('sending nothing makes no request and is not an error', async () => {
    const sender = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    await expect(sender.send([])).resolves.toBeUndefined();
    expect(await visibleCount()).toBe(0);
  });

  it('a delayed hint stays invisible, then arrives', async () => {
    const sender = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    await sender.send([{ v: 1, reason: 'retry', operationId: 'delayed' }], { delaySeconds: 2 });

    const { Attributes } = await queue.client.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.queueUrl, AttributeNames: ['ApproximateNumberOfMessagesDelayed'] }),
    );
    expect(Attributes?.ApproximateNumberOfMessagesDelayed).toBe('1');
    expect((await drain(1)).map(parseWakeupMessage)).toEqual([{ v: 1, reason: 'retry', operationId: 'delayed' }]);
  });

  it('refuses a delay outside SQS DelaySeconds (0–900, integer) before sending anything', async () => {
    const sender = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    const hint: WakeupMessage = { v: 1, reason: 'sweeper' };
    await expect(sender.send([hint], { delaySeconds: 901 })).rejects.toBeInstanceOf(RangeError);
    await expect(sender.send([hint], { delaySeconds: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(sender.send([hint], { delaySeconds: 1.5 })).rejects.toBeInstanceOf(RangeError);
    expect(await visibleCount()).toBe(0);
  });

  it('refuses a hint the worker would refuse, before sending any of the batch', async () => {
    const sender = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    const tooLong = { v: 1, reason: 'admitted', operationId: 'x'.repeat(37) } as const;
    await expect(sender.send([{ v: 1, reason: 'admitted' }, tooLong])).rejects.toBeInstanceOf(ValidationError);
    expect(await visibleCount()).toBe(0);
  });
});

describe('parseWakeupMessage', () => {
  it('accepts every documented reason, with or without an operation id', () => {
    for (const reason of ['admitted', 'retry', 'owner_retry', 'sweeper', 'capacity_freed'] as const) {
      expect(parseWakeupMessage(JSON.stringify({ v: 1, reason }))).toEqual({ v: 1, reason });
    }
    const id = '0b6f7a3e-4c1d-4e2a-9f3b-1a2b3c4d5e6f';
    expect(parseWakeupMessage(JSON.stringify({ v: 1, reason: 'retry', operationId: id }))).toEqual({ v: 1, reason: 'retry', operationId: id });
  });

  it.each([
    ['not JSON', '{"v":1,'],
    ['an empty body', ''],
    ['a JSON array', '[]'],
    ['JSON null', 'null'],
    ['another schema version', '{"v":2,"reason":"admitted"}'],
    ['a missing version', '{"reason":"admitted"}'],
    ['an unknown reason', '{"v":1,"reason":"because"}'],
    ['an unknown key (strict)', '{"v":1,"reason":"admitted","priority":9}'],
    ['an operation id over 36 characters', JSON.stringify({ v: 1, reason: 'admitted', operationId: 'x'.repeat(37) })],
    ['an empty operation id', '{"v":1,"reason":"admitted","operationId":""}'],
    ['a numeric operation id', '{"v":1,"reason":"admitted","operationId":42}'],
  ])('refuses %s with a ValidationError', (_, body) => {
    expect(() => parseWakeupMessage(body)).toThrow(ValidationError);
  });

  it('names the offending field in the issues', () => {
    try {
      parseWakeupMessage('{"v":1,"reason":"because"}');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues.map((i) => i.path)).toEqual(['reason']);
    }
  });
});
