import { DurableOpsError } from '../errors.js';

/**
 * Every way a model call can fail, as a bounded code (docs/design.md §5: the worker classifies failures with bounded codes and
 * the circuit breaker counts them per route):
 *
 * - `timeout` — our own request timeout (`timeoutMs`) passed before a complete answer arrived.
 * - `aborted` — the caller's `AbortSignal` fired (cancel requested, lease lost, Lambda running out of time).
 * - `connection` — no answer at all: connection refused or reset, DNS failure, TLS failure.
 * - `server_error` — the endpoint answered HTTP 5xx (or the Lambda service a server fault).
 * - `rate_limited` — the endpoint answered HTTP 429 (Lambda: `TooManyRequestsException`).
 * - `rejected` — any other non-2xx answer (4xx, or a 3xx we do not follow): the request itself was refused.
 * - `invalid_response` — a 2xx answer whose body is not chat-completions JSON.
 * - `response_too_large` — the body exceeded the configured `maxResponseBytes`; reading stopped there.
 * - `invalid_output` — the model's content is not JSON, or not JSON the caller's schema accepts.
 * - `function_error` — the model sidecar Lambda ran and failed (`FunctionError` set on the Invoke answer).
 */
export const MODEL_FAILURES = [
  'timeout',
  'aborted',
  'connection',
  'server_error',
  'rate_limited',
  'rejected',
  'invalid_response',
  'response_too_large',
  'invalid_output',
  'function_error',
] as const;

/** One of {@link MODEL_FAILURES}. */
export type ModelFailure = (typeof MODEL_FAILURES)[number];

/**
 * Whether trying the same request again (later, or on another attempt) can succeed. `aborted` is `false`: the caller
 * aborted on purpose and decides itself what happens next. `invalid_response` is `true`: a proxy error page or a
 * truncated answer from an overloaded local server is usually transient, and the attempt budget bounds the cost.
 */
const RETRYABLE: Readonly<Record<ModelFailure, boolean>> = Object.freeze({
  timeout: true,
  aborted: false,
  connection: true,
  server_error: true,
  rate_limited: true,
  rejected: false,
  invalid_response: true,
  response_too_large: false,
  invalid_output: false,
  function_error: true,
});

/** True when a call that failed with `failure` may succeed if tried again (see {@link MODEL_FAILURES}). */
export function isRetryableModelFailure(failure: ModelFailure): boolean {
  return RETRYABLE[failure];
}

function message(failure: ModelFailure, httpStatus: number | null): string {
  switch (failure) {
    case 'timeout':
      return 'model request timed out';
    case 'aborted':
      return 'model request was aborted by the caller';
    case 'connection':
      return 'could not reach the model endpoint';
    case 'server_error':
    case 'rate_limited':
    case 'rejected':
      return httpStatus === null ? `model endpoint refused the request (${failure})` : `model endpoint answered HTTP ${httpStatus}`;
    case 'invalid_response':
      return 'model endpoint answered with something other than a chat-completions response';
    case 'response_too_large':
      return 'model response exceeded the configured size limit';
    case 'invalid_output':
      return 'model output is not JSON that matches the requested schema';
    case 'function_error':
      return 'model Lambda function failed';
  }
}

/** Context of a {@link ModelCallError}; none of it may hold a prompt, a response body or a credential. */
export interface ModelCallErrorOptions {
  /** HTTP status of the answer, when there was one. */
  readonly httpStatus?: number;
  /**
   * A provider or transport error code safe to log (e.g. `ECONNREFUSED`, the AWS SDK error name
   * `ResourceNotFoundException`, a Lambda `errorType`), reduced to `[A-Za-z0-9_.]` and at most 64 characters.
   */
  readonly providerCode?: string;
}

/**
 * Thrown when a call to a model endpoint (HTTP or Lambda) or the validation of its answer fails. `failure` says how
 * (a bounded code, see {@link MODEL_FAILURES}) and `retryable` whether trying again can help. The message is one fixed
 * short sentence per failure (at most the HTTP status): never the API key, the prompt, the request or the response
 * body. It carries no `cause`: a transport error's text can quote a header value or the body, so only its bounded
 * code (`ECONNREFUSED`, `UND_ERR_SOCKET`, an SDK error name) is kept, as {@link ModelCallError.providerCode}.
 */
export class ModelCallError extends DurableOpsError {
  readonly code = 'model_call_failed' as const;
  /** How the call failed. */
  readonly failure: ModelFailure;
  /** True when trying the same call again may succeed (see {@link isRetryableModelFailure}). */
  readonly retryable: boolean;
  /** HTTP status of the endpoint's answer, `null` when there was none (or it was a 2xx with a bad body). */
  readonly httpStatus: number | null;
  /** A bounded provider error code (see {@link ModelCallErrorOptions.providerCode}), `null` when none. */
  readonly providerCode: string | null;

  constructor(failure: ModelFailure, options: ModelCallErrorOptions = {}) {
    const httpStatus = options.httpStatus ?? null;
    super(message(failure, httpStatus));
    this.failure = failure;
    this.retryable = isRetryableModelFailure(failure);
    this.httpStatus = httpStatus;
    const code = options.providerCode?.replace(/[^A-Za-z0-9_.]/g, '').slice(0, 64);
    this.providerCode = code ? code : null;
  }
}

/**
 * The failure of an answer with a non-2xx HTTP status: 429 → `rate_limited`, 5xx → `server_error`, anything else
 * (4xx, an unfollowed 3xx) → `rejected`.
 */
export function failureForStatus(status: number): ModelFailure {
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'rejected';
}

/**
 * The most specific bounded code of a transport or SDK error, for {@link ModelCallError.providerCode}: the system
 * code of its cause (`fetch` wraps socket errors: `TypeError: fetch failed` → cause `ECONNREFUSED`), else its own
 * `code`, else its `name`. Never its message.
 */
export function transportErrorCode(error: unknown): string | undefined {
  const read = (value: unknown, key: 'code' | 'name'): string | undefined => {
    if (typeof value !== 'object' || value === null) return undefined;
    const field = (value as Record<string, unknown>)[key];
    return typeof field === 'string' && field !== '' ? field : undefined;
  };
  const cause = typeof error === 'object' && error !== null ? (error as { cause?: unknown }).cause : undefined;
  return read(cause, 'code') ?? read(error, 'code') ?? read(error, 'name');
}
