import { z } from 'zod';
import { ValidationError } from '../errors.js';

/**
 * The body of an SQS wake-up message (docs/design.md §1, §5): **only a hint** that eligible work may exist. A worker
 * that receives one claims the best eligible operation by priority and ignores `operationId`, so a lost or
 * duplicated message can never lose or duplicate work.
 *
 * - `v`: schema version, always `1`.
 * - `reason`: who sent it — `admitted` (after an admission commit), `retry` (a due retry, or a claim that failed and
 *   was hinted again at once), `owner_retry`
 *   (an owner re-queued a failed/cancelled operation), `sweeper` (re-sent for rows left queued too long) or
 *   `capacity_freed` (a run on a limited route ended, so an operation waiting for that route may start).
 * - `operationId`: the operation that prompted the hint, for logs and tracing only (≤ 36 characters, a UUID).
 *
 * Strict: unknown keys are refused, so a message from another producer is never mistaken for ours.
 */
export const WakeupMessageSchema = z.strictObject({
  v: z.literal(1),
  reason: z.enum(['admitted', 'retry', 'owner_retry', 'sweeper', 'capacity_freed']),
  operationId: z.string().min(1).max(36).optional(),
});

/** A parsed wake-up hint; see {@link WakeupMessageSchema}. */
export type WakeupMessage = z.infer<typeof WakeupMessageSchema>;

/**
 * Parses one SQS message body into a {@link WakeupMessage}: SQS bodies are parsed per record, with zod.
 * @param body the raw SQS message body (JSON text).
 * @throws {ValidationError} when the body is not JSON or does not match {@link WakeupMessageSchema}.
 */
export function parseWakeupMessage(body: string): WakeupMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ValidationError('The wake-up message body is not valid JSON.', [{ path: '', message: 'not JSON' }]);
  }
  const parsed = WakeupMessageSchema.safeParse(json);
  if (!parsed.success) {
    throw new ValidationError(
      'The wake-up message body does not match the wake-up schema.',
      parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
    );
  }
  return parsed.data;
}
