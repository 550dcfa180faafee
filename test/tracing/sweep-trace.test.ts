import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { SqsWakeupSender } from '../../lib/queue/wakeup-sender.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { startTracing } from '../../lib/tracing/start-tracing.js';
import { testDeps } from '../support/fixtures.js';
import { implementationDatabase, IMPLEMENTATIONS } from '../support/test-store.js';
import { onlySpan, readTraceFile } from '../support/trace-file.js';

const dir = mkdtempSync(join(tmpdir(), 'durable-ops-sweep-trace-'));
const traceFile = join(dir, 'traces.jsonl');
const tracing = startTracing({ exporter: 'none', traceFile, serviceName: 'durable-ops-test' });

afterAll(async () => {
  await tracing.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(IMPLEMENTATIONS)('a sweeper run traced: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines });
  let queue: LocalQueue;

  beforeAll(async () => {
    if (!db.skip) queue = await startLocalQueue();
  });
  afterAll(async () => queue?.stop());

  it.skipIf(db.skip)('a sweep is one span with its counts, its re-sent wake-ups are its children, and each message carries that trace', async () => {
    const deps = testDeps();
    // The admission's own wake-up is lost, so the row comes due for the sweeper's re-send.
    deps.wakeups.failNext = true;
    const { operation } = await admitOperation(new OwnerScope(db.store, 'sweep-owner'), deps, 'sweep-key-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} });
    db.t.clock.advance(deps.policy.wakeupResendMs + 1);
    const wakeups = new SqsWakeupSender({ client: queue.client, queueUrl: queue.queueUrl });
    const counts = await runSweepOnce({ store: db.store, policy: deps.policy, wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
    expect(counts.wakeupsSent).toBe(1);
    await tracing.flush();

    const spans = readTraceFile(traceFile);
    const publish = onlySpan(spans, (s) => s.name === 'wakeup publish' && s.attributes['durable_ops.wakeup.operation.id'] === operation.id, 'publish of the re-sent wake-up');
    expect(publish).toMatchObject({ kind: 'PRODUCER', attributes: { 'durable_ops.wakeup.reason': 'sweeper', 'messaging.batch.message_count': 1 } });
    const sweep = onlySpan(spans, (s) => s.spanId === publish.parentSpanId, 'parent of the publish span');
    expect(sweep).toMatchObject({ name: 'sweep', traceId: publish.traceId, attributes: { 'durable_ops.sweep.wakeups_sent': 1, 'durable_ops.sweep.budget_exhausted': false } });
    expect(sweep.parentSpanId, 'a sweeper run starts its own trace').toBeUndefined();

    const { Messages = [] } = await queue.client.send(
      new ReceiveMessageCommand({ QueueUrl: queue.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
    );
    expect(Messages).toHaveLength(1);
    expect(Messages[0]?.MessageAttributes?.traceparent).toEqual({ DataType: 'String', StringValue: `00-${sweep.traceId}-${publish.spanId}-01` });
  });
});
