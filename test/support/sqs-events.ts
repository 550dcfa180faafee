import { randomUUID } from 'node:crypto';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { localLambdaContext } from '../../lib/local/lambda-context.js';

/** A Lambda-shaped SQS record carrying `body`. */
export function sqsRecord(body: string): SQSRecord {
  const messageId = randomUUID();
  return {
    messageId,
    receiptHandle: `test-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:durable-ops-test',
    awsRegion: 'us-east-1',
  };
}

/** A Lambda-shaped SQS event with one wake-up record per reason given. */
export function wakeupEvent(count = 1, body = JSON.stringify({ v: 1, reason: 'admitted' })): SQSEvent {
  return { Records: Array.from({ length: count }, () => sqsRecord(body)) };
}

/** A Lambda context whose remaining time counts down from `timeoutMs`. */
export function lambdaContext(timeoutMs = 900_000): Context {
  return localLambdaContext({ functionName: 'durable-ops-test-worker', timeoutMs });
}
