import { FailureCode } from './failure-code.js';

/**
 * How an attempt failed (docs/design.md §5 classification). `entitlement_revoked`: the owner lost the entitlement before the
 * run, which fails closed at once.
 */
export type FailureKind = 'retryable' | 'permanent' | 'timeout' | 'entitlement_revoked' | 'invalid_model_output' | 'model_rejected' | 'subject_not_found';

/** Why an attempt ended without success: a failure its worker reported, or its lease expiring (the sweeper saw it). */
export type AttemptEndKind = FailureKind | 'lease_expired';

/** Failure kinds that end the operation at once, whatever attempts are left. */
const FINAL_KINDS: ReadonlySet<AttemptEndKind> = new Set<AttemptEndKind>(['permanent', 'entitlement_revoked', 'invalid_model_output', 'model_rejected', 'subject_not_found']);

/** The failure code an operation ends with when its last attempt ends this way (or a final kind ends it at once). */
const FINAL_CODE: Readonly<Record<AttemptEndKind, FailureCode>> = Object.freeze({
  permanent: FailureCode.permanentError,
  entitlement_revoked: FailureCode.entitlementRevoked,
  timeout: FailureCode.timeout,
  retryable: FailureCode.retriesExhausted,
  invalid_model_output: FailureCode.invalidModelOutput,
  model_rejected: FailureCode.modelRejected,
  subject_not_found: FailureCode.subjectNotFound,
  lease_expired: FailureCode.leaseExpired,
});

/** What {@link attemptOutcome} decides from. */
export interface AttemptOutcomeInput {
  readonly kind: AttemptEndKind;
  /** The 1-based attempt that just ended. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Whether the owner asked to cancel while the attempt ran (`cancel_requested_at` is set). */
  readonly cancelRequested: boolean;
  /**
   * How long a retry after this attempt would wait, in **milliseconds**: the task type's backoff for this attempt
   * (`retryDelayMs`, exponential with jitter), computed by the caller so that this decision stays free of randomness.
   * Ignored for a lease expiry, which is retried at once.
   */
  readonly retryInMs: number;
  /**
   * The attempt failed retryably on the local model route and the operation may use the external one (docs/design.md §5: its
   * privacy snapshot and the task type allow it, and an external route is configured). @default false
   */
  readonly externalFallback?: boolean;
}

/**
 * What an ended attempt makes of its operation, with the transition-table event that writes it (docs/design.md §2):
 * - `cancelled` — the owner's cancel wins over any further attempt (`acknowledge_cancel`; the sweeper's
 *   `lease_expired_cancelled`);
 * - `failed` with its bounded code — a final kind, or no attempt left (`permanent_failure`; `lease_expired_final`);
 * - `waiting_for_external_fallback` — claimable at once by an external-route claimer (`external_fallback`);
 * - `waiting_for_retry`, claimable again `retryInMs` **milliseconds** after the database clock's now
 *   (`retryable_failure`; `lease_expired_retry`, at once: the lease length already spaced the attempts).
 */
export type AttemptOutcome =
  | { readonly status: 'cancelled'; readonly event: 'acknowledge_cancel' | 'lease_expired_cancelled' }
  | { readonly status: 'failed'; readonly event: 'permanent_failure' | 'lease_expired_final'; readonly failureCode: FailureCode }
  | { readonly status: 'waiting_for_external_fallback'; readonly event: 'external_fallback' }
  | { readonly status: 'waiting_for_retry'; readonly event: 'retryable_failure' | 'lease_expired_retry'; readonly retryInMs: number };

/** An {@link AttemptOutcome} decided without a cancel request: everything but `cancelled`. */
export type UncancelledOutcome = Exclude<AttemptOutcome, { readonly status: 'cancelled' }>;

/**
 * The one decision of what an attempt that did not succeed becomes (modelled on River's `makeRetryDecision`): used by
 * the worker's failure path and by the sweeper's expired-lease pass. Pure: the same input gives the same answer. In
 * order:
 *
 * 1. cancel requested → `cancelled`;
 * 2. a final kind (`permanent`, `entitlement_revoked`, `invalid_model_output`, `model_rejected`, `subject_not_found`)
 *    → `failed` with its code, whatever attempts are left;
 * 3. no attempt left (`attempt >= maxAttempts`) → `failed`: `retries_exhausted` (retryable), `timeout`,
 *    `lease_expired`;
 * 4. `externalFallback` → `waiting_for_external_fallback`;
 * 5. otherwise → `waiting_for_retry`: after a worker-reported failure in `retryInMs`, after a lease expiry at once.
 *
 * It takes no clock: every time it returns is relative to the database clock's now, which the guarded UPDATE reads
 * (docs/design.md §3). For the same reason the queued deadline is not an input: the claim and the sweeper compare
 * `deadline_at` with the database clock, so a retry whose backoff ends past the deadline fails `deadline_exceeded`
 * there.
 *
 * The worker does not know whether a cancel was requested when it writes: it writes this decision with
 * `cancelRequested: false` under a guard `cancel_requested_at IS NULL`, and when that guard fails, the decision with
 * `cancelRequested: true` — both in one transaction (`failAttempt` in `transitions.ts`).
 */
export function attemptOutcome(input: AttemptOutcomeInput & { readonly cancelRequested: false }): UncancelledOutcome;
export function attemptOutcome(input: AttemptOutcomeInput): AttemptOutcome;
export function attemptOutcome(input: AttemptOutcomeInput): AttemptOutcome {
  const expired = input.kind === 'lease_expired';
  if (input.cancelRequested) return { status: 'cancelled', event: expired ? 'lease_expired_cancelled' : 'acknowledge_cancel' };
  if (FINAL_KINDS.has(input.kind) || input.attempt >= input.maxAttempts) {
    return { status: 'failed', event: expired ? 'lease_expired_final' : 'permanent_failure', failureCode: FINAL_CODE[input.kind] };
  }
  if (expired) return { status: 'waiting_for_retry', event: 'lease_expired_retry', retryInMs: 0 };
  if (input.externalFallback === true) return { status: 'waiting_for_external_fallback', event: 'external_fallback' };
  return { status: 'waiting_for_retry', event: 'retryable_failure', retryInMs: input.retryInMs };
}
