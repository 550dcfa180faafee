import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { z } from 'zod';
import { createProcessLogger, describeError, type Logger } from '../logger.js';
import { localLambdaContext } from './lambda-context.js';

/**
 * A Lambda SQS handler: the same function the `worker` Lambda exports. Its result is read as a partial batch
 * response (`{ batchItemFailures: [{ itemIdentifier }] }`), as with `functionResponseType: ReportBatchItemFailures`.
 */
export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<unknown>;

/** Options of {@link startSqsPoller}. */
export interface SqsPollerOptions {
  /** A client that can reach the queue (for fauxqs: one with an explicit endpoint). */
  client: SQSClient;
  /** The exact queue URL SQS (or fauxqs) issued. */
  queueUrl: string;
  handler: SqsBatchHandler;
  /**
   * Messages per invocation, 1–10 (the ReceiveMessage limit). @default 1 — {@link SQS_POLLER_DEFAULTS}, as serverless.yml
   * deploys the worker (`workerBatchSize`): an invocation lives as long as its slowest record, so with more than one
   * a long run holds back the short ones received with it and, once every invocation holds one, every wake-up after it.
   */
  batchSize?: number;
  /** Long-poll wait per ReceiveMessage, in **seconds**, 1–20 (0 is refused: it would busy-loop). @default 1 */
  waitTimeSeconds?: number;
  /**
   * Batches whose invocations may run at once, 1–100 (the ESM `maximumConcurrency` analogue). @default 10 —
   * {@link SQS_POLLER_DEFAULTS}, serverless.yml's `workerMaxConcurrency`; with one message per invocation, the most runs
   * at once (README "Sizing the worker").
   */
  maxConcurrentBatches?: number;
  /** The simulated Lambda timeout, in **ms**, 1–900000; `context.getRemainingTimeInMillis()` counts down from it. @default 900000 */
  functionTimeoutMs?: number;
  /** @default a Powertools process logger (`createProcessLogger`) */
  logger?: Logger;
}

/** A running {@link startSqsPoller} loop. */
export interface SqsPoller {
  /**
   * Stops receiving at once and resolves when every in-flight invocation has finished and been acknowledged.
   * A pending long poll is aborted; a message the queue hands to that abandoned poll (fauxqs does) is not lost:
   * it reappears after the visibility timeout.
   */
  stop(): Promise<void>;
}

/**
 * The defaults of {@link SqsPollerOptions}: the worker as serverless.yml deploys it — one message per invocation
 * (`custom.workerBatchSize`) and at most 10 invocations at once (`workerMaxConcurrency`), so the local stack has the
 * deployment's execution model: W = 10 runs at once, one long run blocking only its own invocation.
 * `test/deploy/serverless-package.test.ts` checks that the packaged template matches.
 */
export const SQS_POLLER_DEFAULTS = Object.freeze({ batchSize: 1, waitTimeSeconds: 1, maxConcurrentBatches: 10, functionTimeoutMs: 900_000 });

const SettingsSchema = z.object({
  batchSize: z.number().int().min(1).max(10).default(SQS_POLLER_DEFAULTS.batchSize),
  waitTimeSeconds: z.number().int().min(1).max(20).default(SQS_POLLER_DEFAULTS.waitTimeSeconds),
  maxConcurrentBatches: z.number().int().min(1).max(100).default(SQS_POLLER_DEFAULTS.maxConcurrentBatches),
  functionTimeoutMs: z.number().int().min(1).max(900_000).default(SQS_POLLER_DEFAULTS.functionTimeoutMs),
});
type Settings = z.infer<typeof SettingsSchema>;

/** First and largest pause after a failed ReceiveMessage, in ms; it doubles per consecutive failure. */
const RECEIVE_BACKOFF_MS = { first: 250, max: 5_000 } as const;

/**
 * The partial batch response, read the way Lambda reads it (AWS Lambda Developer Guide, "Handling errors for
 * an SQS event source", success and failure conditions): nothing, `{}`, or a null/empty `batchItemFailures`
 * is complete success; an item without a non-empty string `itemIdentifier` is complete failure.
 */
const BatchResponseSchema = z
  .object({ batchItemFailures: z.array(z.object({ itemIdentifier: z.string().min(1) })).nullish() })
  .nullish();

/**
 * Runs a Lambda SQS handler locally the way the SQS event source mapping with `ReportBatchItemFailures` runs it
 * in AWS: long-polls the queue, invokes `handler` with a Lambda-shaped `SQSEvent` and `Context`, then deletes
 * only the records not listed in `batchItemFailures`. A throw, a timeout (past `functionTimeoutMs`), or an
 * invalid response (an unknown or empty `itemIdentifier`, or anything but an object) deletes **nothing**, so
 * the messages return after the visibility timeout and reach the DLQ after `maxReceiveCount` receives.
 * Up to `maxConcurrentBatches` invocations run at once; while all are busy nothing is received, so a waiting message
 * goes to the next invocation that ends (by default each invocation holds one message: {@link SQS_POLLER_DEFAULTS}).
 * Receive errors are logged and retried with backoff.
 *
 * ```
 * receive ──▶ invoke(batch) ──▶ delete records not in batchItemFailures
 *   │  (next receive starts at once while a slot is free; waits for a slot when all are busy)
 * ```
 * @throws {RangeError} when a numeric option is out of range.
 */
export function startSqsPoller(options: SqsPollerOptions): SqsPoller {
  const parsed = SettingsSchema.safeParse(options);
  if (!parsed.success) {
    throw new RangeError(`Invalid SQS poller options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const settings = parsed.data;
  const logger = options.logger ?? createProcessLogger();
  const abort = new AbortController();
  const inFlight = new Set<Promise<void>>();

  const loop = (async () => {
    let queueArn: string | undefined;
    let failures = 0;
    while (!abort.signal.aborted) {
      try {
        queueArn ??= await readQueueArn(options.client, options.queueUrl, abort.signal);
        const arn = queueArn;
        while (inFlight.size >= settings.maxConcurrentBatches) await Promise.race(inFlight);
        if (abort.signal.aborted) break;
        const { Messages } = await options.client.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: settings.batchSize,
            WaitTimeSeconds: settings.waitTimeSeconds,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: abort.signal },
        );
        failures = 0;
        if (Messages && Messages.length > 0) {
          const records = Messages.map((message) => toRecord(message, arn));
          const invocation = invoke(options, settings, logger, records).finally(() => inFlight.delete(invocation));
          inFlight.add(invocation);
        }
      } catch (error) {
        if (abort.signal.aborted) break;
        failures += 1;
        const retryInMs = Math.min(RECEIVE_BACKOFF_MS.max, RECEIVE_BACKOFF_MS.first * 2 ** (failures - 1));
        logger.error('SQS receive failed; retrying', { ...describeError(error), retryInMs });
        await delay(retryInMs, undefined, { signal: abort.signal }).catch(() => undefined);
      }
    }
  })();

  return {
    async stop() {
      abort.abort();
      await loop;
      await Promise.all(inFlight);
    },
  };
}

/** One invocation: never rejects, so the poll loop can race in-flight invocations for a free slot. */
async function invoke(options: SqsPollerOptions, settings: Settings, logger: Logger, records: SQSRecord[]): Promise<void> {
  // Monotonic: a jump of the wall clock (NTP, a skewed host) must not make an invocation look timed out.
  const startedAt = performance.now();
  let response: unknown;
  try {
    response = await options.handler({ Records: records }, createContext(settings.functionTimeoutMs, records[0]?.eventSourceARN ?? ''));
  } catch (error) {
    logger.error('SQS handler threw; the whole batch will be redelivered', { ...describeError(error), records: records.length });
    return;
  }
  if (performance.now() - startedAt > settings.functionTimeoutMs) {
    logger.error('SQS handler ran past functionTimeoutMs; Lambda would have failed the batch', { functionTimeoutMs: settings.functionTimeoutMs });
    return;
  }
  const done = recordsToDelete(response, records);
  if (done === undefined) {
    logger.error('SQS handler returned an invalid batch response; the whole batch will be redelivered', { records: records.length });
    return;
  }
  if (done.length === 0) return;
  try {
    const result = await options.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
      }),
    );
    if (result.Failed && result.Failed.length > 0) {
      logger.warn('SQS refused some deletes; those messages will be redelivered', { failed: result.Failed.length });
    }
  } catch (error) {
    logger.warn('SQS delete failed; the batch will be redelivered', describeError(error));
  }
}

/** The records to delete, or `undefined` when the response fails the whole batch (Lambda's rules). */
function recordsToDelete(response: unknown, records: SQSRecord[]): SQSRecord[] | undefined {
  const parsed = BatchResponseSchema.safeParse(response);
  if (!parsed.success) return undefined;
  const failed = new Set((parsed.data?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const ids = new Set(records.map((r) => r.messageId));
  for (const id of failed) if (!ids.has(id)) return undefined;
  return records.filter((r) => !failed.has(r.messageId));
}

async function readQueueArn(client: SQSClient, queueUrl: string, signal: AbortSignal): Promise<string> {
  const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }), {
    abortSignal: signal,
  });
  if (!Attributes?.QueueArn) throw new Error(`SQS returned no QueueArn for ${queueUrl}.`);
  return Attributes.QueueArn;
}

/** Maps one SQS API message to the record shape Lambda's SQS event source delivers. */
function toRecord(message: Message, queueArn: string): SQSRecord {
  const system = message.Attributes ?? {};
  const attributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    attributes[name] = {
      dataType: value.DataType ?? 'String',
      stringValue: value.StringValue,
      binaryValue: value.BinaryValue ? Buffer.from(value.BinaryValue).toString('base64') : undefined,
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
    };
  }
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ...system,
      ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
      SentTimestamp: system.SentTimestamp ?? '',
      SenderId: system.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? '',
    },
    messageAttributes: attributes,
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3] ?? '',
  };
}

/** A Lambda-shaped context whose remaining time counts down from `functionTimeoutMs`. */
function createContext(functionTimeoutMs: number, queueArn: string): Context {
  const [, , , region = 'local', account = '000000000000'] = queueArn.split(':');
  return localLambdaContext({ functionName: 'durable-ops-local-worker', timeoutMs: functionTimeoutMs, region, account });
}
