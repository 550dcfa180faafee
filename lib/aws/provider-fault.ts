/**
 * How an AWS SDK v3 call failed, for the recovery ledger (docs/design.md §8): did the provider answer and refuse, or is the
 * outcome unknown?
 *
 * SDK v3 service errors carry `$fault: 'client' | 'server'` and `$metadata.httpStatusCode`
 * (AWS SDK for JavaScript v3 developer guide, "Error handling"). A `client` fault is an HTTP 4xx answer: the service
 * received the request and refused it, so the effect did not happen (for SQS SendMessage and S3 PutObject alike).
 * Anything else — a 5xx, a timeout, a dropped connection — may or may not have taken effect. The SDK has already
 * retried throttling and transient errors (standard retry mode) before either reaches us.
 */

/** The parts of an SDK v3 service error this module reads. */
interface SdkErrorShape {
  readonly name?: unknown;
  readonly $fault?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

function shape(error: unknown): SdkErrorShape {
  return typeof error === 'object' && error !== null ? (error as SdkErrorShape) : {};
}

/**
 * True when the provider answered with a client fault (HTTP 4xx): a definitive refusal, so the effect did not happen
 * and the ledger records `rejected`. False for server faults and for errors without an answer (outcome unknown).
 */
export function isProviderRefusal(error: unknown): boolean {
  return shape(error).$fault === 'client';
}

/** True when the provider answered HTTP 404 (S3 HeadObject's `NotFound`, `NoSuchKey`). */
export function isProviderNotFound(error: unknown): boolean {
  return shape(error).$metadata?.httpStatusCode === 404;
}

/**
 * Evidence of a provider's answer that is safe for the ledger: the error code (its `name`, e.g. `QueueDoesNotExist`,
 * `NoSuchBucket`, reduced to `[A-Za-z0-9_.]`, at most 64 characters) and the HTTP status, `null` without an answer.
 * Never the message, which may echo request content.
 */
export function providerResult(error: unknown): { resultCode: string; httpStatus: number | null } {
  const { name, $metadata } = shape(error);
  const code = (typeof name === 'string' ? name : '').replace(/[^A-Za-z0-9_.]/g, '').slice(0, 64);
  const status = $metadata?.httpStatusCode;
  return { resultCode: code === '' ? 'unknown' : code, httpStatus: typeof status === 'number' ? status : null };
}
