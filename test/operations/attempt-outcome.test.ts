import { describe, expect, it } from 'vitest';
import { attemptOutcome, type AttemptEndKind } from '../../lib/operations/lifecycle/attempt-outcome.js';

const KINDS: readonly AttemptEndKind[] = ['retryable', 'timeout', 'permanent', 'entitlement_revoked', 'invalid_model_output', 'model_rejected', 'subject_not_found', 'lease_expired'];

/** The code each kind ends an operation with when it ends it (written out from the table, not from the code). */
const FINAL_CODE: Readonly<Record<AttemptEndKind, string>> = {
  retryable: 'retries_exhausted',
  timeout: 'timeout',
  permanent: 'permanent_error',
  entitlement_revoked: 'entitlement_revoked',
  invalid_model_output: 'invalid_model_output',
  model_rejected: 'model_rejected',
  subject_not_found: 'subject_not_found',
  lease_expired: 'lease_expired',
};

/** Kinds that may leave attempts for later; every other kind ends the operation at once. */
const RETRYABLE = new Set<AttemptEndKind>(['retryable', 'timeout', 'lease_expired']);

describe('attemptOutcome: what an attempt that did not succeed makes of its operation', () => {
  // Every kind × first / middle / final / past-final attempt × cancel requested or not × fallback eligible or not.
  const rows = KINDS.flatMap((kind) =>
    [1, 2, 3, 4].flatMap((attempt) => [false, true].flatMap((cancelRequested) => [false, true].map((externalFallback) => ({ kind, attempt, cancelRequested, externalFallback })))),
  );

  it.each(rows)('$kind on attempt $attempt of 3 (cancel: $cancelRequested, fallback: $externalFallback)', ({ kind, attempt, cancelRequested, externalFallback }) => {
    const outcome = attemptOutcome({ kind, attempt, maxAttempts: 3, cancelRequested, retryInMs: 7_000, externalFallback });
    const expired = kind === 'lease_expired';
    if (cancelRequested) {
      expect(outcome).toEqual({ status: 'cancelled', event: expired ? 'lease_expired_cancelled' : 'acknowledge_cancel' });
    } else if (!RETRYABLE.has(kind) || attempt >= 3) {
      expect(outcome).toEqual({ status: 'failed', event: expired ? 'lease_expired_final' : 'permanent_failure', failureCode: FINAL_CODE[kind] });
    } else if (expired) {
      expect(outcome).toEqual({ status: 'waiting_for_retry', event: 'lease_expired_retry', retryInMs: 0 });
    } else if (externalFallback) {
      expect(outcome).toEqual({ status: 'waiting_for_external_fallback', event: 'external_fallback' });
    } else {
      expect(outcome).toEqual({ status: 'waiting_for_retry', event: 'retryable_failure', retryInMs: 7_000 });
    }
  });

  it('the boundary is attempt = maxAttempts: one below retries, at it fails, for every budget 1–100', () => {
    for (let maxAttempts = 1; maxAttempts <= 100; maxAttempts++) {
      const at = (attempt: number) => attemptOutcome({ kind: 'retryable', attempt, maxAttempts, cancelRequested: false, retryInMs: 1 }).status;
      if (maxAttempts > 1) expect(at(maxAttempts - 1)).toBe('waiting_for_retry');
      expect(at(maxAttempts)).toBe('failed');
    }
  });

  it('a cancel requested wins over every other rule, even a final kind on the final attempt', () => {
    for (const kind of KINDS) {
      expect(attemptOutcome({ kind, attempt: 3, maxAttempts: 3, cancelRequested: true, retryInMs: 0, externalFallback: true }).status).toBe('cancelled');
    }
  });
});
