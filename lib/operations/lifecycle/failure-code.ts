import { z } from 'zod';

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

/** Every {@link FailureCode}, in declaration order: the one list the DTO enums (and so the OpenAPI documents) are built from. */
export const FAILURE_CODES = Object.values(FailureCode) as [FailureCode, ...FailureCode[]];

/**
 * A failure code on the wire: one of {@link FAILURE_CODES}, a closed set a client can switch on exhaustively. The
 * OpenAPI documents name it `FailureCode`.
 */
export const FailureCodeSchema = z.enum(FAILURE_CODES).meta({
  id: 'FailureCode',
  description: 'Why the operation failed, from a closed set (see the README’s failure codes); the free-text message stays operator-only.',
});

/**
 * {@link FailureCodeSchema} or null (an operation that did not fail). A union rather than `.nullable()`: for a named
 * schema, `@asteasolutions/zod-to-openapi` renders `.nullable()` as `allOf: [$ref, {type: [string, null]}]`, which
 * refuses null; the union becomes `anyOf: [$ref, {type: null}]`, which the documents and generated clients read right.
 */
export const NullableFailureCodeSchema = z.union([FailureCodeSchema, z.null()]);

/**
 * Narrows a stored `failure_code` column (a string, or null when the operation did not fail) to a {@link FailureCode}.
 * Every write of the column takes a `FailureCode`, so anything else is a corrupted row.
 * @throws {z.ZodError} when `value` is a string outside {@link FAILURE_CODES} (answered as a generic 500 over HTTP).
 */
export function failureCodeOf(value: string | null): FailureCode | null {
  return value === null ? null : FailureCodeSchema.parse(value);
}
