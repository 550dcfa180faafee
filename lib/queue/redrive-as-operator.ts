import { z } from 'zod';
import type { Store } from '../db/store.js';
import { DeadLetterQueueNotConfiguredError } from '../errors.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import type { DeadLetterQueue } from './dead-letter-queue.js';
import { redriveDeadLetters } from './redrive-dlq.js';
import { operatorActor } from '../owners/actor.js';

/** Most dead letters one operator redrive moves: a batch that fits the API's 25 s timeout. */
export const MAX_OPERATOR_REDRIVE = 100;

/** Body of `POST /api/ops/dlq/redrive` (optional): `maxMessages` 1–100, @default 100. */
export const RedriveRequestSchema = z
  .strictObject({ maxMessages: z.number().int().min(1).max(MAX_OPERATOR_REDRIVE).optional() })
  .meta({ id: 'RedriveRequest' });

const count = z.number().int().min(0);

/**
 * The answer of `POST /api/ops/dlq/redrive`: `moved` dead letters went back to the worker queue (each once, through the
 * recovery ledger); `skipped` ones stay in the DLQ because their redrive key was already used (an operator reconciles
 * them: `npm run recovery -- list`); `rejected` ones SQS refused.
 */
export const RedriveResultSchema = z.strictObject({ moved: count, skipped: count, rejected: count }).meta({ id: 'RedriveResult' });

/** See {@link RedriveResultSchema}. */
export type RedriveResult = z.infer<typeof RedriveResultSchema>;

/**
 * Redrives dead letters as an operator (the CLI's `redrive-dlq`, over the API): up to `maxMessages` messages from the
 * runtime's DLQ back to its worker queue with `redriveDeadLetters` — each a `queue.redrive` recovery operation, leased
 * by `operator:<sub>`, so a dead letter is never sent twice.
 * @throws {ValidationError} an invalid body (400).
 * @throws {DeadLetterQueueNotConfiguredError} no `SQS_DLQ_URL` (409).
 * @throws the first SQS or database error (500); messages already handled stay handled.
 */
export async function redriveAsOperator(
  deps: { readonly store: Store; readonly deadLetters?: DeadLetterQueue | undefined },
  operator: string,
  body: unknown,
): Promise<RedriveResult> {
  const { maxMessages = MAX_OPERATOR_REDRIVE } = parseOrThrow(RedriveRequestSchema, body, 'body');
  const queue = deps.deadLetters;
  if (!queue) throw new DeadLetterQueueNotConfiguredError();
  const counts = await redriveDeadLetters({
    client: queue.client,
    store: deps.store,
    dlqUrl: queue.dlqUrl,
    queueUrl: queue.queueUrl,
    leaseOwner: operatorActor(operator),
    maxMessages,
  });
  return { moved: counts.moved, skipped: counts.skipped, rejected: counts.rejected };
}
