import type { z } from 'zod';
import type { ModelSession } from '../ai/model-session.js';
import type { TxContext } from '../db/database.js';
import type { OwnerScope } from '../operations/scopes.js';
import type { ResultObjects } from '../results/result-objects.js';

/** What a task handler receives for one attempt. */
export interface TaskContext<P> {
  readonly operationId: string;
  readonly ownerUserId: string;
  /**
   * The owner scope the attempt runs in (docs/design.md §3): a task reads the owner's own rows (e.g. the job a feature names
   * as its subject) through it, never by id alone.
   */
  readonly scope: OwnerScope;
  /** The opaque subject reference stored at admission (`{type, id}`); the task rehydrates what it names. */
  readonly subject: { readonly type: string; readonly id: string };
  /** The params, already validated against the task's `paramsSchema`. */
  readonly params: P;
  /** 1-based attempt number within the current cycle. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /**
   * Aborted when the owner cancels (seen at a heartbeat), the lease is lost, or the timeout passes. The handler
   * must stop promptly and throw (or return); what it returns after an abort is ignored.
   */
  readonly signal: AbortSignal;
  /**
   * Whether the attempt's lease may still hold, by the worker's own clock (its self-fence; docs/design.md §3): false —
   * and the `signal` aborted at that moment — once the local lease deadline, less the fence margin, has passed without
   * a newer heartbeat acknowledged. Call it right before every external call and skip the call when it is false: the
   * signal alone is aborted by a timer, which a process paused past its lease end (a blocked event loop, a long GC)
   * runs only after it resumes — this check cannot be outrun. The model session asks it before every request.
   */
  leaseHeld(): boolean;
  /**
   * Records progress (percent 0–100, stage ≤ 64 chars) and heartbeats the lease. Resolves once written.
   * @throws {import('../errors.js').LeaseLostError} when the lease is gone; the handler should let it propagate.
   */
  reportProgress(percent: number, stage?: string): Promise<void>;
  /**
   * Where a task may publish a result object through the recovery ledger (`publishTaskResult`); present only when
   * `RESULTS_BUCKET` is configured, so a task must treat it as optional.
   */
  readonly results?: ResultObjects;
  /**
   * The model route this attempt runs on (docs/design.md §5), present only for task types that declare `model`: local first;
   * the external route only on a claim from `waiting_for_external_fallback`. It records provenance and feeds the
   * route's circuit breaker; by default it allows one inference per attempt.
   */
  readonly model?: ModelSession;
}

/**
 * What a successful run may return: `publish` runs inside the transaction that marks the operation `succeeded` (with
 * its notification), under the lease — so what it writes exists if and only if the operation succeeded. It must only
 * write through `tx`; when the lease was lost meanwhile, the transaction rolls back and nothing is published.
 */
export interface TaskCompletion {
  publish(tx: TxContext): Promise<void>;
}

/**
 * One active operation per subject (docs/design.md §2, Idempotency: an exclusive subject reuses the active operation).
 * Admission of this task type — through its feature route or `POST /api/operations` alike — locks the subject and, when
 * the owner already has an active operation of this type on it, answers that one (200) and binds the new idempotency key
 * to it; an owner retry is refused (409) while another is active.
 */
export interface ExclusiveSubject {
  /** The only subject type the task accepts (any other is a 400). */
  readonly type: string;
  /**
   * Locks the owner's subject row in the caller's transaction (`SELECT … FOR UPDATE` when `rowLocks`, i.e. MariaDB;
   * SQLite runs one write transaction at a time), so admissions and retries of one subject take turns.
   * @throws a typed not-found error (HTTP 404) when the subject is missing or another owner's.
   */
  lock(tx: TxContext, subject: { readonly ownerUserId: string; readonly id: string; readonly rowLocks: boolean }): Promise<void>;
}

/** How a task type uses model routes (docs/design.md §5). */
export interface TaskModelUse {
  /**
   * Puts the task type on the external allowlist: after a retryable failure of the local route, an operation whose
   * privacy snapshot is `external_allowed` may fall back to the external route. @default false (local routes only)
   */
  readonly externalAllowed?: boolean;
  /** Model calls allowed in one attempt. @default 1 */
  readonly inferencesPerAttempt?: number;
}

/** Retry policy of a task type. Delays in **milliseconds**. */
export interface RetryPolicy {
  /** Delay before the second attempt; doubled each attempt. */
  readonly baseDelayMs: number;
  /** Upper bound of any one delay. */
  readonly maxDelayMs: number;
}

/**
 * A task handler's registration (docs/design.md §5): its type, params schema, priority tier, attempts, timeout, lease,
 * retry policy, entitlement, capacity route, model use (whether external routes are allowed), and what admission may
 * ask of one operation (a per-operation priority, a delay).
 */
export interface TaskDefinition<S extends z.ZodType = z.ZodType> {
  /** Matches `TASK_TYPE_PATTERN`, e.g. `demo.wait`. */
  readonly type: string;
  /** zod schema of the params; its output is what is stored and handed to `run`. */
  readonly paramsSchema: S;
  /**
   * The task type's **tier** between task types: while a type of a higher tier has due work within its owners' limits,
   * a lower one waits (docs/design.md §4, fair share: order). -1000..1000. Not the per-operation priority that orders
   * one owner's own queue of this type: that is {@link operationPriority}. @default 0
   */
  readonly priority?: number;
  /**
   * Opts the task type in to a **per-operation priority**: admission accepts `priority` (an integer in `min..max`) and
   * stores it on the row, where it orders the owner's own queue of this type — the higher first, then the oldest — and
   * nothing else: it never moves the operation ahead of another owner's turn, nor of another task type's tier
   * (docs/design.md §4, fair share: order). An operation admitted without one gets 0 clamped into `min..max`. Both
   * bounds are integers in -1000..1000 with `min <= max` (checked at registration). Without this, a `priority` in the
   * request is a 400 and the row stores {@link priority}, as before. @default not accepted
   */
  readonly operationPriority?: { readonly min: number; readonly max: number };
  /**
   * Opts the task type in to **delayed operations**: admission accepts `delaySeconds` or `runAt` (one of them) up to
   * `maxSeconds` after the database clock's now; the operation is `queued` but claimable only from then on, its queued
   * deadline counts from then, and it holds its owner's admission capacity while it waits (docs/design.md §4, delayed
   * operations). `maxSeconds` is an integer, 1 to `FieldLimits.delaySeconds.max` (30 days; checked at registration).
   * Without this, a delay in the request is a 400. @default not accepted
   */
  readonly delay?: { readonly maxSeconds: number };
  /** Attempts per cycle. @default config MAX_ATTEMPTS */
  readonly maxAttempts?: number;
  /** Per-attempt timeout in **milliseconds**; also capped below the Lambda's remaining time. */
  readonly timeoutMs: number;
  /** Lease length in **seconds**. @default config LEASE_SECONDS */
  readonly leaseSeconds?: number;
  /** @default base RETRY_BASE_SECONDS, max RETRY_MAX_SECONDS from config */
  readonly retry?: RetryPolicy;
  /** How long an admitted operation may wait to start, in **seconds**. @default config QUEUED_DEADLINE_SECONDS */
  readonly deadlineSeconds?: number;
  /**
   * What the owner's live settings must allow (docs/design.md §4), checked at admission (403 otherwise) and again before each
   * run (`failed`/`entitlement_revoked` otherwise). @default no requirement
   */
  readonly entitlement?: { readonly aiEnabled?: boolean; readonly plans?: readonly string[] };
  /**
   * Execution route whose limit bounds running attempts across all workers, e.g. `local-model` (pool
   * `route:local-model`, limit from the capacity file's `routes`). @default none: unlimited
   */
  readonly capacityRoute?: string;
  /**
   * Declares a model task (docs/design.md §5): its attempts get `context.model`, run local-first, wait while the route's circuit
   * breaker is open, and classify model failures (timeout, 5xx, connection: retryable; 4xx, invalid output: permanent).
   * The capacity route, if any, bounds local runs only. @default not a model task
   */
  readonly model?: TaskModelUse;
  /** At most one active operation per subject, reused by admission. @default any number */
  readonly exclusiveSubject?: ExclusiveSubject;
  /**
   * Runs one attempt. Throw {@link RetryableTaskError} / {@link PermanentTaskError} to classify a failure; return a
   * {@link TaskCompletion} to publish a result in the same transaction as the success.
   */
  run(context: TaskContext<z.output<S>>): Promise<void | TaskCompletion>;
}

/**
 * Thrown by a task handler for a failure that may succeed on another attempt. Other unclassified errors are
 * treated the same way. `message` is stored for operators only, truncated, never shown to the owner.
 */
export class RetryableTaskError extends Error {
  override readonly name = 'RetryableTaskError';
}

/** Thrown by a task handler for a failure that retrying cannot fix: the operation fails at once. */
export class PermanentTaskError extends Error {
  override readonly name: string = 'PermanentTaskError';
}

/**
 * Thrown by a task handler when the subject its operation names (e.g. the owner's job) no longer exists for the owner:
 * the operation fails at once with the code `subject_not_found`.
 */
export class SubjectNotFoundError extends PermanentTaskError {
  override readonly name = 'SubjectNotFoundError';
}

/** Identity helper that keeps the params type of a task definition. */
export function defineTask<S extends z.ZodType>(definition: TaskDefinition<S>): TaskDefinition<S> {
  return definition;
}
