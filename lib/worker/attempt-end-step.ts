import { ValidationError } from '../errors.js';
import { describeError } from '../logger.js';
import { ModelCallError } from '../models/model-errors.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { recordFailedAttempt } from '../operations/lease/lease-operations.js';
import { attemptOutcome, type FailureKind } from '../operations/lifecycle/attempt-outcome.js';
import { retryDelayMs } from '../operations/lifecycle/backoff.js';
import type { OperationPolicy } from '../operations/operation-policy.js';
import type { OwnerScope } from '../operations/scopes.js';
import { sendWakeup } from '../queue/send-wakeup.js';
import { SQS_MAX_DELAY_SECONDS, type WakeupSender } from '../queue/wakeup-sender.js';
import type { Logger } from '../logger.js';
import { PermanentTaskError, SubjectNotFoundError, type RetryPolicy } from '../tasks/task-definition.js';
import type { AttemptEnd } from './attempt-end.js';

/** A failed run's verdict: how it failed (docs/design.md §5 classification) and the operator-only message. */
export interface FailureVerdict {
  readonly kind: FailureKind;
  readonly message: string;
}

/**
 * The failure kind and operator message of a failed run (docs/design.md §5 classification): model failures by their bounded
 * code (timeout, 5xx, 429, connection: retryable; invalid output, 4xx, oversize: permanent), typed task errors by class,
 * anything else retryable.
 */
export function classifyFailure(failure: unknown): FailureVerdict {
  if (failure instanceof ModelCallError) {
    // Operator-only text: the fixed message plus the bounded provider code (ECONNREFUSED, an SDK error name), if any.
    const message = failure.providerCode ? `${failure.message} (${failure.providerCode})` : failure.message;
    if (failure.failure === 'invalid_output') return { kind: 'invalid_model_output', message };
    if (failure.failure === 'timeout') return { kind: 'timeout', message };
    return { kind: failure.retryable || failure.failure === 'aborted' ? 'retryable' : 'model_rejected', message };
  }
  const message = describeError(failure).errorMessage as string;
  if (failure instanceof SubjectNotFoundError) return { kind: 'subject_not_found', message };
  if (failure instanceof ValidationError || failure instanceof PermanentTaskError) return { kind: 'permanent', message };
  return { kind: 'retryable', message };
}

/** What the outcome step needs. */
export interface AttemptEndDeps {
  readonly policy: OperationPolicy;
  readonly wakeups: WakeupSender;
  readonly logger: Logger;
  /** Jitter source in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

/**
 * The outcome step of a failed attempt: decides what the operation becomes ({@link attemptOutcome}, with the task's
 * backoff for this attempt), writes it under the lease (the owner's cancel still wins in that write) and sends the
 * wake-up the new state needs after the commit.
 *
 * How long until a failed attempt retries: the operation is claimable again `retryDelayMs(attempt)` after the
 * database clock — exponential backoff with equal jitter, `nominal = min(max, base × 2^(attempt − 1))`, a delay in
 * `[nominal / 2, nominal]`; `base`/`max` are the task type's `retry` policy, by default `RETRY_BASE_SECONDS` (5 s) and
 * `RETRY_MAX_SECONDS` (300 s). The wake-up that makes a worker claim it then:
 *
 * - `waiting_for_retry`: an SQS message delayed by the backoff when it is at most 900 s (the sweeper re-sends
 *   `wakeupResendMs` after it is due if that message is lost); a longer backoff is left to the sweeper's due wake-up
 *   (the next sweep after it is due);
 * - `waiting_for_external_fallback`: claimable at once, a message now (re-sent by the sweeper after `wakeupResendMs`
 *   if lost).
 * An expired lease (the sweeper's) is retried at once instead: the lease length already spaced the attempts.
 *
 * @param externalFallback the local model route failed retryably and the operation may use the external route.
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 */
export async function endFailedAttempt(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: AttemptEndDeps,
  verdict: FailureVerdict,
  retry: RetryPolicy,
  externalFallback = false,
): Promise<AttemptEnd> {
  // With a fallback eligible the outcome is the fallback or a failure, never a retry: no backoff is drawn for it.
  const retryInMs = externalFallback ? 0 : retryDelayMs(claim.attempt, retry, deps.random);
  const decided = attemptOutcome({ kind: verdict.kind, attempt: claim.attempt, maxAttempts: claim.maxAttempts, cancelRequested: false, retryInMs, externalFallback });
  const delaySeconds = Math.ceil(retryInMs / 1000);
  const viaSqsDelay = delaySeconds <= SQS_MAX_DELAY_SECONDS;
  const resendMs = deps.policy.wakeupResendMs;
  const wakeAfterMs = decided.status === 'waiting_for_external_fallback' ? resendMs : viaSqsDelay ? retryInMs + resendMs : retryInMs;
  const message = decided.status === 'waiting_for_external_fallback' ? `local route: ${verdict.message}` : verdict.message;
  const outcome = await recordFailedAttempt(owner, claim, decided, message, wakeAfterMs);
  const failureKind = verdict.kind === 'timeout' ? 'timeout' : 'retryable';
  switch (outcome.status) {
    case 'failed':
      return { outcome: 'failed', failureCode: outcome.failureCode };
    case 'cancelled':
      return { outcome: 'cancelled' };
    case 'waiting_for_external_fallback':
      await sendWakeup(deps, { v: 1, reason: 'retry', operationId: claim.operationId });
      return { outcome: 'waiting_for_external_fallback', failureKind };
    case 'waiting_for_retry':
      if (viaSqsDelay) await sendWakeup(deps, { v: 1, reason: 'retry', operationId: claim.operationId }, delaySeconds);
      return { outcome: 'waiting_for_retry', failureKind, retryInMs: outcome.retryInMs };
  }
}
