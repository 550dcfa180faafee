import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { z } from 'zod';
import {
  CapacityExhaustedError,
  DatabaseUnavailableError,
  DeadLetterQueueNotConfiguredError,
  DurableOpsError,
  IdempotencyKeyReusedError,
  InvalidTransitionError,
  JobNotFoundError,
  NotEntitledError,
  OperationNotFoundError,
  RateLimitedError,
  RetryLimitReachedError,
  SecretInEvidenceError,
  SnapshotNotFoundError,
  SubjectBusyError,
  UnauthorizedError,
  UnknownTaskTypeError,
  ValidationError,
} from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import { ContentTooLargeError, HostNotAllowedError, MethodNotAllowedError, RouteNotFoundError, UnsupportedMediaTypeError } from './http-errors.js';
import { statusUrlOf } from '../operations/owner/operation-dto.js';
import {
  ChainBrokenError,
  InvalidRecoveryMoveError,
  NothingToTakeOverError,
  RecoveryOperationNotFoundError,
  StaleFenceError,
  VerificationRequiredError,
} from '../recovery/recovery-errors.js';

/** Media type of every error response (RFC 9457 §3). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Base of the `type` URI of every typed problem; the problem's code (kebab-case) is appended. */
const PROBLEM_TYPE_BASE = 'https://durable-ops.dev/problems/';

/**
 * An error response body (RFC 9457 problem details): `type` (a URI naming the problem kind, `about:blank` for the
 * generic 500), `title` (fixed per kind), `status` (the HTTP status, repeated), `detail` (a fixed, client-safe
 * sentence), `code` (the stable error code, e.g. `validation_failed`) and, for validation failures, `errors` —
 * at most 20 `{path, message}` pairs. It never carries idempotency keys, lease tokens, internal error text or the
 * raw input.
 */
export const ProblemSchema = z.strictObject({
  type: z.string().min(1),
  title: z.string().min(1),
  status: z.number().int().min(400).max(599),
  detail: z.string(),
  code: z.string().regex(/^[a-z][a-z_]*$/),
  errors: z
    .array(z.strictObject({ path: z.string().max(200), message: z.string().max(300) }))
    .max(20)
    .optional(),
  /**
   * Extension member (RFC 9457 §3.2) of a feature's cache miss and of a busy subject: the status URL of the active
   * operation.
   */
  statusUrl: z.string().startsWith('/api/operations/').optional(),
}).meta({ id: 'Problem', description: 'RFC 9457 problem details (`application/problem+json`).' });

/** See {@link ProblemSchema}. */
export type Problem = z.infer<typeof ProblemSchema>;

type ErrorClass = abstract new (...args: never[]) => DurableOpsError;

/**
 * The one table from error class to HTTP status (statuses from docs/design.md §7 and §4 — 403 for a missing
 * entitlement, 429 for exhausted capacity or an empty admission rate bucket (`rate_limited`) — and, for a reused key,
 * the IETF `Idempotency-Key` header draft §2.7; the
 * recovery ledger's refusals of the operator routes, docs/design.md §8: 400 evidence, 404 unknown id, 409 state, lease or chain).
 * Typed errors absent here (`LeaseLostError`, `ScopeViolationError`, `ConfigError`) are server faults if they ever
 * reach the API: they answer the generic 500.
 */
const STATUS_OF: ReadonlyArray<{ readonly error: ErrorClass; readonly status: number; readonly title: string }> = [
  { error: ValidationError, status: 400, title: 'Invalid request' },
  { error: UnknownTaskTypeError, status: 400, title: 'Unknown task type' },
  { error: VerificationRequiredError, status: 400, title: 'Verification required' },
  { error: SecretInEvidenceError, status: 400, title: 'Secret in evidence' },
  { error: UnauthorizedError, status: 401, title: 'Unauthorized' },
  { error: NotEntitledError, status: 403, title: 'Not entitled' },
  { error: OperationNotFoundError, status: 404, title: 'Operation not found' },
  { error: SnapshotNotFoundError, status: 404, title: 'Snapshot not found' },
  { error: JobNotFoundError, status: 404, title: 'Job not found' },
  { error: RecoveryOperationNotFoundError, status: 404, title: 'Recovery operation not found' },
  { error: RouteNotFoundError, status: 404, title: 'Not found' },
  { error: MethodNotAllowedError, status: 405, title: 'Method not allowed' },
  { error: InvalidTransitionError, status: 409, title: 'Conflict with the operation state' },
  { error: RetryLimitReachedError, status: 409, title: 'Retry limit reached' },
  { error: SubjectBusyError, status: 409, title: 'Subject busy' },
  { error: InvalidRecoveryMoveError, status: 409, title: 'Conflict with the recovery operation state' },
  { error: NothingToTakeOverError, status: 409, title: 'Recovery operation is held' },
  { error: StaleFenceError, status: 409, title: 'Recovery operation was taken over' },
  { error: ChainBrokenError, status: 409, title: 'Recovery chain broken' },
  { error: DeadLetterQueueNotConfiguredError, status: 409, title: 'No dead-letter queue' },
  { error: ContentTooLargeError, status: 413, title: 'Content too large' },
  { error: UnsupportedMediaTypeError, status: 415, title: 'Unsupported media type' },
  { error: HostNotAllowedError, status: 421, title: 'Host not allowed' },
  { error: IdempotencyKeyReusedError, status: 422, title: 'Idempotency-Key reused' },
  { error: CapacityExhaustedError, status: 429, title: 'Too many active operations' },
  { error: RateLimitedError, status: 429, title: 'Too many admissions' },
  { error: DatabaseUnavailableError, status: 503, title: 'Service unavailable' },
];

/**
 * The `Retry-After` of a 503 `database_unavailable`, in **seconds** (RFC 9110 §10.2.3 delay-seconds). Long enough that
 * clients retrying together do not hammer a server that is starting up (crash recovery, every pool reconnecting) or an
 * RDS Proxy already out of connections; short enough that an outage of a few seconds — a restart, a killed connection,
 * a brief connection limit — costs a retrying client little. Clients should grow it on repeats (with jitter).
 */
export const DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The body of every 500: generic, so no internal text (SQL, driver messages, stack) ever reaches a client. */
const INTERNAL_PROBLEM: Problem = Object.freeze({
  type: 'about:blank',
  title: 'Internal Server Error',
  status: 500,
  detail: 'The request could not be completed. Try again later.',
  code: 'internal_error',
});

function headersOf(error: DurableOpsError): Record<string, string> {
  // RFC 6750 §3: a 401 for a bearer-token resource names the scheme.
  if (error instanceof UnauthorizedError) return { 'www-authenticate': 'Bearer' };
  // RFC 9110 §15.5.6: a 405 lists the methods the resource supports.
  if (error instanceof MethodNotAllowedError) return { allow: error.allowedMethods.join(', ') };
  // RFC 6585 §4 and RFC 9110 §10.2.3: a 429 may say, in delay-seconds, when to try again. Only the configured delay
  // is sent — never a pool's size or how many slots other owners hold.
  if (error instanceof CapacityExhaustedError) return { 'retry-after': String(error.retryAfterSeconds) };
  // The rate limit's 429: the wait until the owner's bucket holds a whole token again (docs/design.md §4) — a time
  // derived from their own bucket, never its size or what is left in it.
  if (error instanceof RateLimitedError) return { 'retry-after': String(error.retryAfterSeconds) };
  // RFC 9110 §15.6.4: a 503 may say when to try again; see DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS.
  if (error instanceof DatabaseUnavailableError) return { 'retry-after': String(DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS) };
  return {};
}

function respond(problem: Problem, headers: Record<string, string>): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: problem.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(ProblemSchema.parse(problem)),
  };
}

/** Where an error happened, for the log line of a 500. */
export interface ProblemContext {
  /** The Lambda (or local) request id. */
  readonly requestId?: string | undefined;
}

/**
 * Turns any thrown value into an RFC 9457 `application/problem+json` response (with `cache-control: no-store`,
 * and `www-authenticate` on a 401, `allow` on a 405, `retry-after` in **seconds** on a 429 and a 503). A typed error of the
 * table above answers its status with its own client-safe message as `detail` (and a validation failure's issues as
 * `errors`); anything else is logged at `error` level (class name and message, for operators) and answers a generic
 * 500 whose body names no internal detail (`type: about:blank`, `code: internal_error`). A database outage
 * (`DatabaseUnavailableError`) answers 503 `database_unavailable` and is logged at `warn` with the driver's code.
 */
export function problemResponse(error: unknown, logger: Logger, context: ProblemContext = {}): APIGatewayProxyStructuredResultV2 {
  const kind = error instanceof DurableOpsError ? STATUS_OF.find((entry) => error instanceof entry.error) : undefined;
  if (!(error instanceof DurableOpsError) || kind === undefined) {
    logger.error('request failed with an unexpected error; answered 500', { requestId: context.requestId, ...describeError(error) });
    return respond(INTERNAL_PROBLEM, {});
  }
  if (error instanceof DatabaseUnavailableError) {
    // An outage, not a bug: one WARN with the driver's code, no stack; the client gets the fixed 503 detail.
    logger.warn('database unavailable; answered 503', { requestId: context.requestId, code: error.code, reason: error.reason });
  }
  const issues = error instanceof ValidationError ? error.issues : [];
  return respond(
    {
      type: `${PROBLEM_TYPE_BASE}${error.code.replaceAll('_', '-')}`,
      title: kind.title,
      status: kind.status,
      detail: error.message,
      code: error.code,
      ...(issues.length > 0
        ? { errors: issues.slice(0, 20).map((issue) => ({ path: issue.path.slice(0, 200), message: issue.message.slice(0, 300) })) }
        : {}),
      ...((error instanceof SnapshotNotFoundError || error instanceof SubjectBusyError) && error.activeOperationId
        ? { statusUrl: statusUrlOf(error.activeOperationId) }
        : {}),
    },
    headersOf(error),
  );
}

/** Options of {@link problemDetailsMiddleware}. */
export interface ProblemDetailsOptions {
  /**
   * The logger for 500s. A function because the API's dependencies (and so its logger) may be built lazily on the
   * first invocation, after the middleware was attached.
   */
  readonly logger: () => Logger;
}

/**
 * The middy `onError` middleware that answers every error of the API with {@link problemResponse}: the one place
 * where errors become HTTP statuses (after `@middy/http-error-handler`, but RFC 9457 bodies and a table of
 * typed errors instead of `http-errors` instances).
 */
export function problemDetailsMiddleware(
  options: ProblemDetailsOptions,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> {
  return {
    onError: (request) => {
      request.response = problemResponse(request.error, options.logger(), { requestId: request.context?.awsRequestId });
    },
  };
}
