// Invokes this repository's *bundled* Lambdas (functions/{api,worker,sweeper}.mjs, what serverless.yml packages) in one
// process, as Lambda would, one operation through: the API admits a demo.wait with an API Gateway HTTP API payload 2.0
// event carrying the JWT authorizer's verified claims (the Lambda trusts API Gateway's check and reads only those), the
// wake-up the API sent is received from the queue at SQS_QUEUE_URL and handed to the worker as the SQS event source
// mapping would (then deleted, as the mapping does on success), the API answers the operation's status, and the
// sweeper runs once on a schedule event. Prints one `bundles: {…}` JSON line, the Node version included. Used by
// test/deploy/node22-bundles.test.ts, which runs it on Node 22; plain JavaScript, no TypeScript loader.
//
//   node invoke-bundled-lambdas.mjs       (DATABASE_URL, SQS_QUEUE_URL, SQS_ENDPOINT, DEMO_TASKS=1 from the environment)
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
import { apiEvent, lambdaContext as context } from '../support/lambda-invocation.mjs';

const load = async (name) => (await import(new URL(`../../functions/${name}.mjs`, import.meta.url).href)).handler;

/** A received SQS message as the event source mapping hands it to the function (AWS Lambda Developer Guide, SQS event). */
function sqsRecord(message, queueArn) {
  const messageAttributes = Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
      name,
      {
        dataType: value.DataType ?? 'String',
        stringValue: value.StringValue,
        binaryValue: value.BinaryValue ? Buffer.from(value.BinaryValue).toString('base64') : undefined,
        stringListValues: value.StringListValues ?? [],
        binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
      },
    ]),
  );
  return {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body,
    attributes: message.Attributes ?? {},
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

const json = (result) => (result.body ? JSON.parse(result.body) : undefined);
const queueUrl = process.env.SQS_QUEUE_URL;
const sqs = new SQSClient({ region: process.env.AWS_REGION ?? 'us-east-1', endpoint: process.env.SQS_ENDPOINT });

const api = await load('api');
const worker = await load('worker');
const sweeper = await load('sweeper');

const admitted = await api(
  apiEvent('POST', '/api/operations', 'alice', {
    headers: { 'idempotency-key': `node22-${randomUUID()}`, 'content-type': 'application/json' },
    body: { taskType: 'demo.wait', subject: { type: 'order', id: 'order-22' }, params: { durationMs: 1 } },
  }),
  context('api', 25_000),
);
const operationId = json(admitted)?.id;

// The API sends its wake-up after the admission commit, before it answers: it is on the queue now (long poll, 10 s).
const { Messages = [] } = await sqs.send(
  new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 10, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
);
const wakeups = Messages.map((message) => JSON.parse(message.Body ?? 'null'));
const batch = await worker({ Records: Messages.map((message) => sqsRecord(message, 'arn:aws:sqs:us-east-1:000000000000:durable-ops-wakeup')) }, context('worker', 300_000));
const failed = new Set(batch.batchItemFailures.map((failure) => failure.itemIdentifier));
for (const message of Messages) {
  if (!failed.has(message.MessageId)) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
}

const final = json(await api(apiEvent('GET', `/api/operations/${operationId}`, 'alice'), context('api', 25_000)));
const swept = await sweeper({ version: '0', id: randomUUID(), 'detail-type': 'Scheduled Event', source: 'aws.events', account: '000000000000', time: new Date().toISOString(), region: 'us-east-1', resources: [], detail: {} }, context('sweeper', 60_000));

console.log(
  `bundles: ${JSON.stringify({
    node: process.versions.node,
    admittedStatus: admitted.statusCode,
    operationId,
    wakeups,
    batchItemFailures: batch.batchItemFailures,
    status: final?.status,
    attempt: final?.attempt,
    swept,
  })}`,
);
sqs.destroy();
// The database pools of the three runtimes would keep the process alive.
process.exit(0);
