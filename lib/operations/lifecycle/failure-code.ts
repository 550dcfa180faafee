/**
 * The bounded failure codes an operation can end with; the only failure detail the owner API shows
 * (docs/design.md §7). Free-text failure messages stay in `failure_message`, operator-only.
 *
 * - `deadline_exceeded`: still waiting when its deadline passed (fails closed).
 * - `lease_expired`: its worker stopped heartbeating on the final attempt.
 * - `timeout`: the task handler ran past its timeout on the final attempt.
 * - `permanent_error`: the handler reported a failure that retrying cannot fix.
 * - `retries_exhausted`: a retryable failure on the final attempt.
 * - `entitlement_revoked`: the owner lost the entitlement the task type requires before it ran (fails closed).
 * - `invalid_model_output`: the model answered, but not with output that passed the task's schema (docs/design.md §5).
 * - `model_rejected`: the model endpoint refused the request (HTTP 4xx other than 429) or answered too much.
 * - `subject_not_found`: the subject the operation names (e.g. a job) no longer exists for the owner.
 */
export const FailureCode = Object.freeze({
  deadlineExceeded: 'deadline_exceeded',
  leaseExpired: 'lease_expired',
  timeout: 'timeout',
  permanentError: 'permanent_error',
  retriesExhausted: 'retries_exhausted',
  entitlementRevoked: 'entitlement_revoked',
  invalidModelOutput: 'invalid_model_output',
  modelRejected: 'model_rejected',
  subjectNotFound: 'subject_not_found',
} as const);

/** One of the {@link FailureCode} values. */
export type FailureCode = (typeof FailureCode)[keyof typeof FailureCode];
