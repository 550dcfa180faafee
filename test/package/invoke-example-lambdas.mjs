// Invokes the webhook-delivery example's *bundled* Lambdas (dist/functions/*.mjs, what serverless.yml packages) in one
// process, as Lambda would: migrate with `{}`, the API with API Gateway HTTP API payload 2.0 events carrying the JWT
// authorizer's claims, the worker with an SQS event of one wake-up, the sweeper with a schedule event. Prints one JSON
// line of what each answered. Used by test/package/example-app.test.ts; plain JavaScript, run with plain node.
//
//   node invoke-example-lambdas.mjs <example dir> <webhook url>     (DATABASE_URL, SQS_QUEUE_URL, … from the environment)
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { apiEvent, lambdaContext as context } from '../support/lambda-invocation.mjs';

const [dir, webhookUrl] = process.argv.slice(2);
if (!dir || !webhookUrl) throw new Error('usage: node invoke-example-lambdas.mjs <example dir> <webhook url>');

const load = async (name) => (await import(pathToFileURL(join(dir, 'dist/functions', `${name}.mjs`)).href)).handler;

/** An SQS event of one wake-up record, as the event source mapping delivers it. */
function wakeup(operationId) {
  const messageId = randomUUID();
  return {
    Records: [
      {
        messageId,
        receiptHandle: `test-${messageId}`,
        body: JSON.stringify({ v: 1, reason: 'admitted', operationId }),
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()), SenderId: 'test', ApproximateFirstReceiveTimestamp: String(Date.now()) },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:webhook-delivery-wakeup',
        awsRegion: 'us-east-1',
      },
    ],
  };
}

const json = (result) => (result.body ? JSON.parse(result.body) : undefined);

const migrate = await load('migrate');
const api = await load('api');
const worker = await load('worker');
const sweeper = await load('sweeper');

const migrated = await migrate({}, context('migrate', 300_000));
const admit = (taskType, params, key) =>
  api(apiEvent('POST', '/api/operations', 'alice', { headers: { 'idempotency-key': key, 'content-type': 'application/json' }, body: { taskType, subject: { type: 'order', id: 'order-7' }, params } }), context('api', 25_000));
const unauthenticated = await api({ ...apiEvent('GET', '/api/operations', 'alice'), requestContext: { ...apiEvent('GET', '/api/operations', 'alice').requestContext, authorizer: undefined } }, context('api', 25_000));
const builtIn = await admit('demo.wait', { durationMs: 1 }, `lambda-${randomUUID()}`);
const admitted = await admit('webhook.deliver', { url: webhookUrl, payload: { event: 'order.shipped', orderId: 'order-7' } }, `lambda-${randomUUID()}`);
const operationId = json(admitted)?.id;
const batch = await worker(wakeup(operationId), context('worker', 300_000));
const final = json(await api(apiEvent('GET', `/api/operations/${operationId}`, 'alice'), context('api', 25_000)));
const swept = await sweeper({ 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} }, context('sweeper', 60_000));

console.log(
  `lambdas: ${JSON.stringify({
    migrated: migrated.results.map((r) => r.status),
    migrateError: migrated.error ?? null,
    unauthenticatedStatus: unauthenticated.statusCode,
    builtInStatus: builtIn.statusCode,
    builtInCode: json(builtIn)?.code ?? null,
    admittedStatus: admitted.statusCode,
    operationId,
    batchItemFailures: batch.batchItemFailures,
    status: final?.status,
    attempt: final?.attempt,
    sweptKeys: Object.keys(swept ?? {}).sort(),
  })}`,
);
// The database pools of the four runtimes would keep the process alive.
process.exit(0);
