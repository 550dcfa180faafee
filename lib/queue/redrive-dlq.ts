import {
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SendMessageCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { isProviderRefusal, providerResult } from '../aws/provider-fault.js';
import type { Store } from '../db/store.js';
import { sha256Hex } from '../hashing/request-hash.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { beginDurableRecoveryOperation } from '../recovery/begin-recovery-operation.js';
import { RecoveryKeyUsedError } from '../recovery/recovery-errors.js';
import type { RecoveryHandle } from '../recovery/recovery-handle.js';

/** The recovery-ledger module of DLQ redrives (docs/design.md §8); kind `send_message`, effect class `forward_only`. */
export const REDRIVE_MODULE = 'queue.redrive';

/**
 * Most messages one ReceiveMessage returns.
 * Source: AWS SQS API reference, ReceiveMessage `MaxNumberOfMessages` ("Valid values: 1 to 10").
 */
const SQS_MAX_RECEIVE = 10;

/** Options of {@link redriveDeadLetters} besides the clients. */
export const RedriveOptionsSchema = z.strictObject({
  /** The dead-letter queue URL, exactly as SQS issued it. */
  dlqUrl: z.string().url(),
  /** The main (worker) queue URL the messages go back to. */
  queueUrl: z.string().url(),
  /** Who holds each ledger lease, e.g. `redrive-dlq:<host>:<pid>`. */
  leaseOwner: z.string().min(1).max(128),
  /** Most DLQ messages received in this run (redriven, skipped or rejected). 1–1000. @default 100 */
  maxMessages: z.number().int().min(1).max(1000).default(100),
  /**
   * How long a received DLQ message stays hidden, in **seconds** (SQS `VisibilityTimeout`, 0–43200). A message this
   * run skips or stops at reappears in the DLQ after it. @default 30
   */
  visibilityTimeoutSeconds: z.number().int().min(0).max(43_200).default(30),
  /** Long-poll wait of each receive, in **seconds** (SQS `WaitTimeSeconds`, 0–20). @default 1 */
  waitTimeSeconds: z.number().int().min(0).max(20).default(1),
  /** Lease of each ledger operation, in **milliseconds**. @default 60000 */
  leaseMs: z.number().int().min(1_000).max(3_600_000).default(60_000),
});

/** Input of {@link redriveDeadLetters}. */
export type RedriveInput = z.input<typeof RedriveOptionsSchema> & { readonly client: SQSClient; readonly store: Store };

/** What one run did. */
export interface RedriveCounts {
  /** Sent to the main queue, deleted from the DLQ, ledger `succeeded` (`moved`, as the operator route answers). */
  moved: number;
  /**
   * Left in the DLQ for an operator: its redrive key was already used (an earlier run sent it, or was interrupted and
   * may have), or SQS returned it without an id, receipt handle or body.
   */
  skipped: number;
  /** SQS refused the send (HTTP 4xx): ledger `rejected`, left in the DLQ. */
  rejected: number;
}

/** The parts of a received DLQ message a redrive needs (zod at the SQS boundary). The body itself is opaque. */
const DeadLetterSchema = z.object({
  MessageId: z.string().regex(/^[A-Za-z0-9-]{1,100}$/),
  ReceiptHandle: z.string().min(1),
  Body: z.string(),
});

/**
 * Moves messages from the dead-letter queue back to the main queue, each through the recovery ledger (docs/design.md §8,
 * effect class `forward_only`: a send cannot be undone, only checked). Per message:
 *
 * ```
 *  begin(queue.redrive/send_message, key redrive:<dlqMessageId>, evidence {dlqMessageId, bodyDigest})
 *    ─▶ SendMessage(main) ─▶ checkpoint sent {sentMessageId, bodyDigest} ─▶ DeleteMessage(DLQ)
 *    ─▶ complete {sent, dlq_deleted}                                          → moved
 *  key already used ─▶ leave it in the DLQ                                    → skipped
 *  SendMessage 4xx  ─▶ reject {resultCode, httpStatus}, leave it in the DLQ   → rejected
 * ```
 *
 * The key is the DLQ message id, so one dead letter is never redriven twice — not even after a crash between the send
 * and the delete: the message reappears in the DLQ, its key is spent, and every later run skips it. The interrupted
 * operation becomes `outcome_unknown` at takeover; `reconcileRedrive` resolves it from its `sent` checkpoint, and an
 * operator then deletes the dead letter. Only the body's SHA-256 reaches the ledger, never the body. Message
 * attributes are carried over; standard queues only (no FIFO group ids).
 *
 * Bounded: batches of up to 10, until a receive returns nothing new (a skipped message reappears once its visibility
 * timeout passes; each is handled once per run) or `maxMessages` were received.
 * Sources: AWS SQS API reference, ReceiveMessage, SendMessage, DeleteMessage; "Amazon SQS dead-letter queues".
 * @throws {ValidationError} invalid options; nothing was done.
 * @throws the first ReceiveMessage/ledger error, or a SendMessage error without a 4xx answer (outcome unknown: the
 *   ledger operation stays `running` until takeover), or a DeleteMessage error (sent, not deleted: likewise). The
 *   run stops there; messages already handled stay handled.
 */
export async function redriveDeadLetters(input: RedriveInput): Promise<RedriveCounts> {
  const { client, store, ...options } = input;
  const parsed = parseOrThrow(RedriveOptionsSchema, options, 'options');
  const counts: RedriveCounts = { moved: 0, skipped: 0, rejected: 0 };
  // A message this run skipped reappears once its visibility timeout passes: count and handle each one once.
  const seen = new Set<string>();
  for (let received = 0; received < parsed.maxMessages; ) {
    const page = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: parsed.dlqUrl,
        MaxNumberOfMessages: Math.min(SQS_MAX_RECEIVE, parsed.maxMessages - received),
        WaitTimeSeconds: parsed.waitTimeSeconds,
        VisibilityTimeout: parsed.visibilityTimeoutSeconds,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = page.Messages ?? [];
    const fresh = messages.filter((message) => !seen.has(message.MessageId ?? ''));
    if (fresh.length === 0) break;
    received += messages.length;
    for (const message of fresh) {
      seen.add(message.MessageId ?? '');
      counts[await redriveOne(client, store, parsed, message)] += 1;
    }
  }
  return counts;
}

/** Redrives one received DLQ message; returns which count it adds to. */
async function redriveOne(client: SQSClient, store: Store, options: z.output<typeof RedriveOptionsSchema>, message: Message): Promise<keyof RedriveCounts> {
  const letter = DeadLetterSchema.safeParse(message);
  if (!letter.success) return 'skipped';
  const { MessageId: dlqMessageId, ReceiptHandle: receiptHandle, Body: body } = letter.data;
  const bodyDigest = `sha256:${sha256Hex(body)}`;
  let handle: RecoveryHandle;
  try {
    handle = await beginDurableRecoveryOperation(store, {
      module: REDRIVE_MODULE,
      kind: 'send_message',
      idempotencyKey: `redrive:${dlqMessageId}`,
      request: { queueUrl: options.queueUrl, dlqUrl: options.dlqUrl, dlqMessageId, bodyDigest },
      effectClass: 'forward_only',
      recoveryPlan: { check: 'main_queue_message', dlqMessageId },
      preconditionEvidence: { dlqMessageId, bodyDigest },
      leaseOwner: options.leaseOwner,
      leaseMs: options.leaseMs,
    });
  } catch (error) {
    if (error instanceof RecoveryKeyUsedError) return 'skipped';
    throw error;
  }
  let sent: SendMessageCommandOutput;
  try {
    sent = await client.send(new SendMessageCommand({ QueueUrl: options.queueUrl, MessageBody: body, MessageAttributes: message.MessageAttributes }));
  } catch (error) {
    if (!isProviderRefusal(error)) throw error;
    await handle.reject({ dlqMessageId, ...providerResult(error) });
    return 'rejected';
  }
  const sentMessageId = sent.MessageId ?? 'unknown';
  await handle.checkpoint('sent', { sentMessageId, bodyDigest });
  await client.send(new DeleteMessageCommand({ QueueUrl: options.dlqUrl, ReceiptHandle: receiptHandle }));
  await handle.complete({
    checks: [
      { name: 'sent', evidence: { sentMessageId, bodyDigest, md5OfBody: sent.MD5OfMessageBody ?? null } },
      { name: 'dlq_deleted', evidence: { dlqMessageId } },
    ],
  });
  return 'moved';
}
