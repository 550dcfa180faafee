/**
 * The one error hierarchy of durable-ops. Every failure a caller can act on is a subclass of
 * {@link DurableOpsError} with a string-literal `code`; HTTP status codes are assigned in exactly one place
 * (`lib/http/problem-details.ts`), never here.
 */

/** Base class of every typed error durable-ops throws. `code` is stable and safe to show to a client. */
export abstract class DurableOpsError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** One problem found while validating input: a JSON-pointer-like path and a human-readable message. */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

/** Thrown when input at a boundary (HTTP body, header, query, SQS body, task params) fails its zod schema. */
export class ValidationError extends DurableOpsError {
  readonly code = 'validation_failed' as const;
  constructor(
    message: string,
    readonly issues: readonly ValidationIssue[] = [],
  ) {
    super(message);
  }
}

/** Thrown when an admission names a task type that no registered task handler serves. */
export class UnknownTaskTypeError extends DurableOpsError {
  readonly code = 'unknown_task_type' as const;
  constructor(readonly taskType: string) {
    super(`Unknown task type "${taskType}".`);
  }
}

/**
 * Thrown when an operation does not exist *for this owner*. Another owner's operation is indistinguishable
 * from a missing one (docs/design.md §7: 404, never 403).
 */
export class OperationNotFoundError extends DurableOpsError {
  readonly code = 'operation_not_found' as const;
  constructor(readonly operationId: string) {
    super('Operation not found.');
  }
}

/**
 * Thrown when a job does not exist *for this owner*, or the job id is not a job id at all. Another owner's job is
 * indistinguishable from a missing one (docs/design.md §7: 404, never 403), and so is a malformed id (as for operations).
 */
export class JobNotFoundError extends DurableOpsError {
  readonly code = 'job_not_found' as const;
  constructor(readonly jobId: string) {
    super('Job not found.');
  }
}

/**
 * Thrown by a cache-only feature read (docs/design.md §7) when the owner's job has no published result of that feature yet.
 * `activeOperationId` names the owner's active operation producing it, if there is one (its status URL is shown).
 */
export class SnapshotNotFoundError extends DurableOpsError {
  readonly code = 'snapshot_not_found' as const;
  constructor(readonly activeOperationId?: string) {
    super(activeOperationId ? 'No snapshot yet; an operation is producing it.' : 'No snapshot yet.');
  }
}

/**
 * Thrown by an owner retry when another operation of the same task type is already active on the same subject (a task
 * type with an exclusive subject, docs/design.md §7): HTTP 409, naming the active operation.
 */
export class SubjectBusyError extends DurableOpsError {
  readonly code = 'subject_busy' as const;
  constructor(readonly activeOperationId: string) {
    super('Another operation is already active for this subject.');
  }
}

/**
 * Thrown when an idempotency key is reused by the same owner and task type with a different request
 * (canonical request hash differs). IETF draft-ietf-httpapi-idempotency-key-header §2.7: 422.
 */
export class IdempotencyKeyReusedError extends DurableOpsError {
  readonly code = 'idempotency_key_reused' as const;
  constructor() {
    super('This Idempotency-Key was already used with a different request.');
  }
}

/** Thrown when an event is not allowed from the operation's current state (docs/design.md §2 transition table). */
export class InvalidTransitionError extends DurableOpsError {
  readonly code = 'invalid_transition' as const;
  constructor(
    readonly operationId: string,
    readonly from: string,
    readonly event: string,
  ) {
    super(`Cannot ${event} an operation that is ${from}.`);
  }
}

/**
 * Thrown when a lease-guarded write (heartbeat, progress, complete, fail, acknowledge-cancel) matched no
 * row: the token is stale or wrong, the lease expired on the database clock, or the operation left
 * `running`. Nothing was changed (docs/design.md §3).
 */
export class LeaseLostError extends DurableOpsError {
  readonly code = 'lease_lost' as const;
  constructor(readonly operationId: string) {
    super('The lease on this operation was lost; nothing was changed.');
  }
}

/** Thrown when an owner retry would exceed the bounded number of manual retries. */
export class RetryLimitReachedError extends DurableOpsError {
  readonly code = 'retry_limit_reached' as const;
  constructor(
    readonly operationId: string,
    readonly limit: number,
  ) {
    super(`This operation was already retried ${limit} times.`);
  }
}

/**
 * Thrown when a call is made from the wrong scope: a claim from an owner scope, or an owner/lease mutation
 * from the neutral worker scope (docs/design.md §3). The types already forbid it; this is the runtime backstop.
 */
export class ScopeViolationError extends DurableOpsError {
  readonly code = 'scope_violation' as const;
}

/**
 * Thrown when a step asked to run inside the caller's transaction (`admitOperation`, `retryOperation` with
 * `{ transaction }`, docs/design.md §4) is given something that is not a kysely transaction opened on the scope's
 * store: it would commit apart from the caller's rows. Nothing was written. A programming error (a 500 if it ever
 * reaches HTTP).
 */
export class ForeignTransactionError extends DurableOpsError {
  readonly code = 'foreign_transaction' as const;
  constructor() {
    super("The transaction must be an open kysely transaction on the owner scope's store (store.db).");
  }
}

/** Thrown when a request carries no verified identity (missing/invalid JWT or authorizer claims). */
export class UnauthorizedError extends DurableOpsError {
  readonly code = 'unauthorized' as const;
}

/** Thrown at start-up when the environment does not describe a valid configuration. */
export class ConfigError extends DurableOpsError {
  readonly code = 'invalid_config' as const;
}

/**
 * Thrown when an admission (or owner retry) would exceed a capacity limit on active operations (docs/design.md §4): nothing
 * was inserted, reserved or sent. `retryAfterSeconds` becomes the 429's `Retry-After`.
 */
export class CapacityExhaustedError extends DurableOpsError {
  readonly code = 'capacity_exhausted' as const;
  constructor(
    readonly pool: 'owner' | 'global',
    readonly retryAfterSeconds: number,
  ) {
    super(pool === 'owner' ? 'You have too many active operations of this type; try again later.' : 'The service is at capacity for this type of operation; try again later.');
  }
}

/**
 * Thrown when an admission (or owner retry) finds the owner's admission token bucket for the task type empty — the
 * admission rate limit, `rate: { burst, perSeconds }` in the capacity file (docs/design.md §4, admission rate): nothing
 * was inserted, reserved, sent or spent. `retryAfterSeconds` (whole **seconds**, at least 1) is the honest wait until one
 * whole token is back, rounded up: an admission that waits that long finds one (unless the owner spent it meanwhile).
 * It becomes the 429's `Retry-After`; the message names no rate or count.
 */
export class RateLimitedError extends DurableOpsError {
  readonly code = 'rate_limited' as const;
  constructor(readonly retryAfterSeconds: number) {
    super('You are starting operations of this type too quickly; try again later.');
  }
}

/** Thrown when the owner's live settings do not entitle them to the task type (e.g. AI disabled): HTTP 403. */
export class NotEntitledError extends DurableOpsError {
  readonly code = 'not_entitled' as const;
  constructor(readonly taskType: string) {
    super('Your account is not entitled to this type of operation.');
  }
}

/**
 * Thrown when recovery evidence or metadata looks like it holds a credential (docs/design.md §8: opaque references,
 * digests, counts and result codes only); nothing was written. `paths[i]` is where (e.g.
 * `evidence.providerResponse`) and `kinds[i]` what kind (e.g. `bearer_token`); the value is never included.
 */
export class SecretInEvidenceError extends DurableOpsError {
  readonly code = 'secret_in_evidence' as const;
  constructor(
    readonly paths: readonly string[],
    readonly kinds: readonly string[] = [],
  ) {
    super(
      `Evidence must hold only opaque references, digests, counts and result codes; secret-looking content was refused at ${paths
        .map((path, i) => (kinds[i] === undefined ? path : `${path} (${kinds[i]})`))
        .join(', ')}.`,
    );
  }
}

/**
 * Thrown when an operator asks to redrive dead letters but no dead-letter queue is configured (`SQS_DLQ_URL` and
 * `SQS_QUEUE_URL`): HTTP 409 — the service as deployed cannot do it.
 */
export class DeadLetterQueueNotConfiguredError extends DurableOpsError {
  readonly code = 'dead_letter_queue_not_configured' as const;
  constructor() {
    super('No dead-letter queue is configured (SQS_DLQ_URL).');
  }
}

/**
 * Thrown when a feature needs an optional peer dependency of the package that the application has not installed:
 * SQLite (`sqlite:` / `file:` URLs) needs `better-sqlite3`, the local stack's queue needs `fauxqs`. Nothing was opened or
 * started. `dependency` is the npm package name, `version` the release durable-ops is tested with; `cause` is the module
 * loader's error.
 */
export class OptionalDependencyMissingError extends DurableOpsError {
  readonly code = 'optional_dependency_missing' as const;
  constructor(
    readonly feature: string,
    readonly dependency: string,
    readonly version: string,
    options?: { cause?: unknown },
  ) {
    super(`${feature} needs the optional peer dependency ${dependency}: npm install ${dependency}@${version}`, options);
  }
}

/**
 * Thrown when a statement waited `waitedMs` (milliseconds) for the SQLite store's one connection and another
 * transaction still held it: nothing of the statement ran. The usual cause is a call on the store made from inside a
 * transaction open on that same store — for example a read, or an `admitOperation` without `{ transaction }`, inside
 * the caller's own transaction — which waits for the very transaction it runs in (docs/design.md §4, "Admission inside
 * the caller's transaction"). Pass the transaction, or make the call after it ends.
 */
export class StoreConnectionBusyError extends DurableOpsError {
  readonly code = 'store_connection_busy' as const;
  constructor(readonly waitedMs: number) {
    super(
      `Waited ${waitedMs} ms for the SQLite store's one connection, which an open transaction holds: a call on the store from inside a transaction on it waits for that transaction — pass it the transaction, or call after the transaction ends`,
    );
  }
}

/**
 * Thrown when the database cannot be reached or cannot serve the statement: a connection refused, reset or lost, too
 * many connections, a server shutting down or restarting, a connect timeout, or RDS Proxy timing out waiting for a
 * database connection (the list is `databaseUnavailableReason` in `lib/db/database-unavailable.ts`). Translated once,
 * in the store's MariaDB driver; HTTP 503 with `Retry-After`. `reason` is the driver's code (`ECONNREFUSED`,
 * `ER_CON_COUNT_ERROR`, `9501`…) — safe to log, never sent to a client; `cause` is the driver error.
 *
 * The transaction it interrupted did not commit — except when the connection was lost after `COMMIT` was sent and
 * before its answer (in doubt: it may have committed). Either way a client retrying with the same `Idempotency-Key`
 * is safe: nothing was written, or the admission replays (docs/design.md §2, Idempotency).
 */
export class DatabaseUnavailableError extends DurableOpsError {
  readonly code = 'database_unavailable' as const;
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super('The database is unavailable; try again shortly. A request with an Idempotency-Key is safe to repeat with the same key.', options);
  }
}
