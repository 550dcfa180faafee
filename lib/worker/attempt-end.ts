import type { LifecycleEvent } from '../observability/lifecycle-events.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import type { FailureCode } from '../operations/lifecycle/failure-code.js';

/** The failure kinds that can leave attempts for later: the rest end the operation at once. */
export type RetryableKind = 'retryable' | 'timeout';

/**
 * How one attempt of a claimed operation ended, with what its lifecycle line needs — the bounded failure code or
 * kind, never the failure's text. `outcome` is the operation's state after it (`lease_lost`: another party owns it).
 */
export type AttemptEnd =
  | { readonly outcome: 'succeeded'; readonly ownerHasDueWork?: boolean | undefined }
  | { readonly outcome: 'cancelled' | 'lease_lost' }
  | { readonly outcome: 'failed'; readonly failureCode: FailureCode }
  | { readonly outcome: 'waiting_for_retry'; readonly failureKind: RetryableKind; readonly retryInMs: number }
  | { readonly outcome: 'waiting_for_external_fallback'; readonly failureKind: RetryableKind };

/**
 * The lifecycle event of an attempt's end: `operation_succeeded`, `operation_failed` (with `failureCode`),
 * `operation_cancelled` (by the worker), `operation_retry_scheduled` (with `retryInMs`), `operation_external_fallback`
 * or `lease_lost`, each with the operation id, task type, attempt and `durationMs` since the run started.
 */
export function attemptEvent(claim: ClaimedOperation, end: AttemptEnd, durationMs: number): LifecycleEvent {
  const base = { operationId: claim.operationId, taskType: claim.taskType, attempt: claim.attempt, durationMs };
  switch (end.outcome) {
    case 'succeeded':
      return { ...base, event: 'operation_succeeded' };
    case 'lease_lost':
      return { ...base, event: 'lease_lost' };
    case 'cancelled':
      return { ...base, event: 'operation_cancelled', by: 'worker' };
    case 'failed':
      return { ...base, event: 'operation_failed', failureCode: end.failureCode };
    case 'waiting_for_retry':
      return { ...base, event: 'operation_retry_scheduled', failureKind: end.failureKind, retryInMs: end.retryInMs };
    case 'waiting_for_external_fallback':
      return { ...base, event: 'operation_external_fallback', failureKind: end.failureKind };
  }
}
