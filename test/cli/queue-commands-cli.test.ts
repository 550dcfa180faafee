/**
 * The CLI commands that need the queue (README "Operator CLI"): `sweep` and `redrive-dlq` say which variable is missing
 * in one line, and `redrive-dlq` prints its counts under the names the operator route answers with.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { RedriveResultSchema } from '../../lib/queue/redrive-as-operator.js';
import { runCli } from '../support/run-script.js';

describe('the queue commands of the operator CLI', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'queue-cli-'));
  const url = `sqlite:${join(dir, 'db.sqlite')}`;
  let queue: LocalQueue;
  beforeAll(async () => {
    expect((await runCli(['migrate'], url)).code).toBe(0);
    queue = await startLocalQueue({ queueName: 'queue-cli' });
  });
  afterAll(async () => {
    await queue?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['sweep without SQS_QUEUE_URL', ['sweep'], {}, 'sweep failed: SQS_QUEUE_URL is required'],
    ['redrive-dlq without SQS_QUEUE_URL', ['redrive-dlq'], {}, 'redrive-dlq failed: SQS_QUEUE_URL is required'],
    ['redrive-dlq without SQS_DLQ_URL', ['redrive-dlq'], { SQS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/q' }, 'redrive-dlq failed: SQS_DLQ_URL is required'],
  ] as const)('%s: exit 1, one line naming the missing variable', async (_name, args, env, line) => {
    const run = await runCli(args, url, { SQS_QUEUE_URL: '', SQS_DLQ_URL: '', SQS_ENDPOINT: '', ...env });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(line);
  });

  it('redrive-dlq prints {"moved", "skipped", "rejected"}, the counts of POST /api/ops/dlq/redrive', async () => {
    await queue.client.send(new SendMessageCommand({ QueueUrl: queue.dlqUrl, MessageBody: '{"v":1,"reason":"retry","operationId":"cli-redrive"}' }));
    const run = await runCli(['redrive-dlq', '--max', '10'], url, { SQS_QUEUE_URL: queue.queueUrl, SQS_DLQ_URL: queue.dlqUrl, SQS_ENDPOINT: queue.endpoint, AWS_REGION: 'us-east-1' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const counts = RedriveResultSchema.parse(JSON.parse(run.stdout));
    expect(counts).toEqual({ moved: 1, skipped: 0, rejected: 0 });
  });
});
