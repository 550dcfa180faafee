import { SendMessageBatchCommand, SQSClient, type SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import { SpanKind } from '@opentelemetry/api';
import { inSpan, SpanAttr } from '../tracing/spans.js';
import { traceContextAttributes } from '../tracing/sqs-trace-context.js';
import { parseWakeupMessage, type WakeupMessage } from './wakeup-message.js';

/**
 * Most entries one `SendMessageBatch` call accepts.
 * Source: AWS SQS API reference, SendMessageBatch ("You can send up to 10 messages").
 */
const SQS_MAX_BATCH_ENTRIES = 10;

/**
 * Largest per-message delay SQS accepts, in **seconds** (15 minutes).
 * Source: AWS SQS API reference, SendMessageBatchRequestEntry.DelaySeconds ("0 to 900").
 */
export const SQS_MAX_DELAY_SECONDS = 900;

/** Options of {@link WakeupSender.send}. */
export interface WakeupSendOptions {
  /**
   * Delay before the messages become visible, in **seconds**, an integer 0–900 (the SQS `DelaySeconds` limit).
   * @default 0 (or the queue's own default delay)
   */
  delaySeconds?: number;
}

/**
 * Sends wake-up hints to the worker queue. A send only nudges a worker: the database row is already
 * durable, and the sweeper re-sends hints for rows left waiting (docs/design.md §4, §6), so a failed send is
 * recoverable and a duplicate send is harmless.
 */
export interface WakeupSender {
  /**
   * Sends every message (none is a no-op).
   * @throws {ValidationError} when a message does not match `WakeupMessageSchema`.
   * @throws {RangeError} when `delaySeconds` is not an integer 0–900.
   * @throws {Error} when SQS refuses any entry; other entries may already have been sent.
   */
  send(messages: readonly WakeupMessage[], options?: WakeupSendOptions): Promise<void>;
}

/** What {@link SqsWakeupSender} needs: an SQS client and the exact queue URL SQS (or fauxqs) issued. */
export interface SqsWakeupSenderDeps {
  client: SQSClient;
  queueUrl: string;
}

/**
 * A {@link WakeupSender} backed by SQS: `SendMessageBatch` in chunks of 10 (the SQS limit), chunks in
 * parallel. Each body is checked with the consumer's own parser before it leaves, so a worker never
 * receives a hint it would refuse. Each `send` is one PRODUCER span, `wakeup publish` (reasons, message count, the
 * operation a single message names), whose W3C trace context every message carries as its `traceparent` /
 * `tracestate` message attributes (`traceContextAttributes`): the worker's span for the message is its child.
 */
export class SqsWakeupSender implements WakeupSender {
  readonly #client: SQSClient;
  readonly #queueUrl: string;

  constructor(deps: SqsWakeupSenderDeps) {
    this.#client = deps.client;
    this.#queueUrl = deps.queueUrl;
  }

  /** {@inheritDoc WakeupSender.send} */
  async send(messages: readonly WakeupMessage[], options: WakeupSendOptions = {}): Promise<void> {
    const delaySeconds = options.delaySeconds;
    if (delaySeconds !== undefined && !(Number.isInteger(delaySeconds) && delaySeconds >= 0 && delaySeconds <= SQS_MAX_DELAY_SECONDS)) {
      throw new RangeError(`delaySeconds must be an integer from 0 to ${SQS_MAX_DELAY_SECONDS}, got ${delaySeconds}.`);
    }
    const bodies = messages.map((message) => {
      const body = JSON.stringify(message);
      parseWakeupMessage(body);
      return body;
    });
    if (bodies.length === 0) return;
    const reasons = [...new Set(messages.map((message) => message.reason))];
    const named = messages.length === 1 ? messages[0]?.operationId : undefined;
    const attributes = {
      [SpanAttr.messagingSystem]: 'aws_sqs',
      [SpanAttr.messagingOperationType]: 'send',
      [SpanAttr.messagingBatchCount]: bodies.length,
      [SpanAttr.wakeupReason]: reasons.join(','),
      ...(named ? { [SpanAttr.wakeupOperationId]: named } : {}),
    };
    await inSpan('wakeup publish', { kind: SpanKind.PRODUCER, attributes }, async () => {
      // The publish span's own context, so each worker's consumer span is its child (README "Tracing").
      const messageAttributes = traceContextAttributes();
      const chunks: SendMessageBatchRequestEntry[][] = [];
      for (let start = 0; start < bodies.length; start += SQS_MAX_BATCH_ENTRIES) {
        chunks.push(
          bodies.slice(start, start + SQS_MAX_BATCH_ENTRIES).map((body, index) => ({
            Id: String(index),
            MessageBody: body,
            DelaySeconds: delaySeconds,
            ...(Object.keys(messageAttributes).length > 0 ? { MessageAttributes: messageAttributes } : {}),
          })),
        );
      }
      await Promise.all(chunks.map((entries) => this.#sendChunk(entries)));
    });
  }

  async #sendChunk(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    const result = await this.#client.send(new SendMessageBatchCommand({ QueueUrl: this.#queueUrl, Entries: entries }));
    const failed = result.Failed ?? [];
    if (failed.length > 0) {
      const detail = failed.map((f) => `${f.Id}: ${f.Code ?? 'unknown'}${f.SenderFault ? ' (sender fault)' : ''} ${f.Message ?? ''}`.trim());
      throw new Error(`SQS refused ${failed.length} of ${entries.length} wake-up messages: ${detail.join('; ')}`);
    }
  }
}

/** Options of {@link createSqsClient}. */
export interface CreateSqsClientOptions {
  /** AWS region, e.g. `eu-west-1`; fauxqs also derives a queue's region (and URL) from it. */
  region: string;
  /**
   * Explicit SQS endpoint, e.g. `http://127.0.0.1:4566` for fauxqs. Unset in AWS. When set, the client talks
   * only to it (never to the host inside a queue URL, which fauxqs makes unresolvable) and signs with dummy
   * static credentials, because a local emulator accepts any.
   */
  endpoint?: string;
}

/**
 * Builds the one `SQSClient` a process uses. In AWS (no endpoint) credentials come from the default provider
 * chain (the Lambda role). With an endpoint (local emulator) it pins that endpoint — the
 * `AWS_ENDPOINT_URL_SQS` variable alone does not stop the SDK from using the queue URL's host — and uses
 * dummy credentials so no real ones are ever looked up or sent.
 */
export function createSqsClient(options: CreateSqsClientOptions): SQSClient {
  if (options.endpoint === undefined) return new SQSClient({ region: options.region });
  return new SQSClient({
    region: options.region,
    endpoint: options.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
