import { takeAdmissionToken } from '../../capacity/admission-rate.js';
import { prepareAdmissionPools, reserveAdmission, restoreMissingPools } from '../../capacity/capacity.js';
import {
  CapacityExhaustedError,
  InvalidTransitionError,
  NotEntitledError,
  OperationNotFoundError,
  RateLimitedError,
  RetryLimitReachedError,
} from '../../errors.js';
import { silentLogger } from '../../logger.js';
import { recordLifecycle, type Telemetry } from '../../observability/lifecycle-events.js';
import { noopMetrics } from '../../observability/metrics.js';
import { recheckOwner } from '../../owners/owner-recheck.js';
import { inTransaction } from '../../db/transaction.js';
import { callerTransaction, inOwnOrCallerTransaction, inSavepoint, once, oneStepAtATime, type AfterCommit, type InCallerTransaction } from '../../db/caller-transaction.js';
import type { Database, DbContext, TxContext } from '../../db/database.js';
import { OperationIdSchema } from '../operation-id.js';
import type { TaskRegistry } from '../../tasks/task-registry.js';
import type { AdmissionDeps } from '../admission/admit-operation.js';
import { sendWakeup } from '../../queue/send-wakeup.js';
import { findOwnedOperation, type OperationRow } from '../store/operation.repository.js';
import { cancelWaiting, requestCancel, requeueForRetry } from '../lifecycle/transitions.js';
import { taskPolicy } from '../operation-policy.js';
import { nextStatus } from '../lifecycle/operation-status.js';
import { getOperation } from './owner-reads.js';
import { assertSubjectFree } from '../admission/exclusive-subject.js';
import { assertOwnerScope, type OwnerScope } from '../scopes.js';
import { assertActor, OWNER_ACTOR, type Actor } from '../../owners/actor.js';

/** Guarded updates that lose a race are re-decided from a fresh read at most this many times. */
const MAX_RACES = 5;

/** Where an owner command records nothing: for callers without telemetry. */
const UNRECORDED: Telemetry = Object.freeze({ logger: silentLogger, metrics: noopMetrics });

/**
 * Owner cancel (docs/design.md §2): a waiting operation (`queued`, `waiting_*`) becomes `cancelled` at once, with its
 * notification, in one transaction; a `running` one keeps running with `cancel_requested_at` set, and its worker
 * aborts at its next heartbeat. Cancelling a cancelled operation changes nothing and returns it.
 *
 * The answer has one of three shapes, decided from the row its own statement changed or found: `cancelled`;
 * `running` with `cancel_requested_at` set (the worker stops at its next heartbeat — unless its run had already
 * finished, in which case the success stands and the operation ends `succeeded`); or {@link InvalidTransitionError}
 * (409) when it had already succeeded or failed.
 * A change is recorded to `telemetry`: `operation_cancelled` (by `owner`, `OperationCancelled`) or `cancel_requested`.
 * @param telemetry where the change is logged and counted. @default nowhere
 * @param by who asks (an `Actor`, recorded as `cancel_requested_by`; the first of several requests is kept): an operator's
 * cancel on the owner's behalf passes its own (`cancelAsOperator`). @default `owner`
 * @returns the operation after the change.
 * @throws {OperationNotFoundError} unknown id or another owner's operation (404).
 * @throws {InvalidTransitionError} already `succeeded` or `failed` (409).
 * @throws {TypeError} `by` is not an `Actor` (empty, over 128 characters, or with a control or format character; `assertActor`); nothing changed.
 */
export async function cancelOperation(scope: OwnerScope, id: unknown, telemetry: Telemetry = UNRECORDED, by: Actor = OWNER_ACTOR): Promise<OperationRow> {
  assertOwnerScope(scope);
  assertActor(by);
  for (let race = 0; race < MAX_RACES; race++) {
    const row = await getOperation(scope, id);
    if (row.status === 'cancelled') return row;
    // The answer is the row as this cancel's own statement left it, read in the same transaction (the UPDATE holds its
    // row lock until the commit), never a later re-read: a completion committing just after cannot turn the answer
    // into a `succeeded` with `cancelRequested: true`.
    if (row.status === 'running') {
      nextStatus(row.id, row.status, 'request_cancel');
      // In a transaction for its retries: even this one UPDATE can deadlock with a completion of the same row (1213).
      const requested = await inTransaction(scope.store, async (tx) =>
        (await requestCancel(tx, row, by)) ? findOwnedOperation(tx, scope.ownerUserId, row.id) : undefined,
      );
      if (!requested) continue;
      if (row.cancel_requested_at === null) recordLifecycle(telemetry, { event: 'cancel_requested', operationId: row.id, taskType: row.task_type });
      return requested;
    }
    nextStatus(row.id, row.status, 'owner_cancel');
    const cancelled = await inTransaction(scope.store, async (tx) =>
      (await cancelWaiting(tx, scope.ownerUserId, row.id, by)) ? findOwnedOperation(tx, scope.ownerUserId, row.id) : undefined,
    );
    if (cancelled) {
      recordLifecycle(telemetry, { event: 'operation_cancelled', by: 'owner', operationId: row.id, taskType: row.task_type });
      return cancelled;
    }
  }
  throw new InvalidTransitionError(String(id), 'changing', 'owner_cancel');
}

/** What an owner retry needs. */
export interface RetryDeps extends AdmissionDeps {
  readonly registry: TaskRegistry;
}

/**
 * The result of {@link retryOperation} inside the caller's transaction (`{ transaction }`): the operation as the retry
 * left it (`queued` once the caller commits), and `afterCommit()`, which the caller calls after its commit to send the
 * wake-up and record the retry. See {@link AfterCommit}.
 */
export interface TransactionalRetry extends AfterCommit {
  readonly operation: OperationRow;
}

/**
 * Owner retry (docs/design.md §2): `failed`/`cancelled` → `queued` with a fresh attempt budget and a new deadline, reserving
 * admission capacity again in the same transaction (as admission does, after rechecking entitlement), then a wake-up
 * after the commit. Bounded by `MAX_MANUAL_RETRIES` per operation. Recorded as `owner_retried`; a full pool as
 * `capacity_rejected` (with the operation id and the pool kind, `CapacityRejected`); an empty rate bucket as
 * `rate_limited` (with the operation id, `RateLimited`).
 *
 * A retry puts work back in the queue, so it spends one token of the owner's admission rate bucket for the task type,
 * exactly as a new admission does (docs/design.md §4, admission rate) — otherwise retrying failed operations would be a
 * way around the rate. The token is taken in the same transaction, after the guarded requeue (a retry that loses its
 * race spends none) and before the slots; an operator's retry on the owner's behalf (`retryAsOperator`) spends the
 * owner's token too.
 * @returns the operation after the change.
 * @throws {OperationNotFoundError} unknown id or another owner's operation (404).
 * @throws {InvalidTransitionError} the operation is not `failed` or `cancelled` (409).
 * @throws {RetryLimitReachedError} the manual-retry budget is used up (409).
 * @throws {NotEntitledError} the owner is no longer entitled to the task type (403).
 * @throws {CapacityExhaustedError} a per-owner or global limit is full (429); nothing changed.
 * @throws {RateLimitedError} the owner's admission rate bucket for the task type is empty (429 `rate_limited`, with
 * `retryAfterSeconds`); nothing changed, no token spent.
 * @throws {SubjectBusyError} the task type has an exclusive subject and another operation is active on it (409).
 * @throws the subject's not-found error (404) when an exclusive-subject task's subject is gone.
 *
 * **Inside the caller's transaction** (`{ transaction }`, docs/design.md §4 "Admission inside the caller's
 * transaction"), as `admitOperation`: every read and write runs on the caller's open transaction behind a savepoint,
 * so the requeue and its capacity commit or roll back with the caller's rows (rolled back, the operation stays as it
 * was: `failed`/`cancelled`, same `retry_count`, nothing held); every refusal above leaves the caller's transaction
 * usable and unchanged; the answer's `afterCommit()` sends the wake-up after the caller's commit, and the sweeper
 * does at `wake_at` if it is never called.
 * @throws {ForeignTransactionError} `transaction` is not a kysely transaction on `scope.store.db`; nothing changed.
 * @throws a transient driver error as it is, inside the caller's transaction (not retried: run the transaction again).
 */
export async function retryOperation(scope: OwnerScope, deps: RetryDeps, id: unknown): Promise<OperationRow>;
export async function retryOperation<DB extends Database>(scope: OwnerScope, deps: RetryDeps, id: unknown, options: InCallerTransaction<DB>): Promise<TransactionalRetry>;
export async function retryOperation<DB extends Database>(
  scope: OwnerScope,
  deps: RetryDeps,
  id: unknown,
  options?: Partial<InCallerTransaction<DB>>,
): Promise<OperationRow | TransactionalRetry> {
  assertOwnerScope(scope);
  if (!options?.transaction) {
    const { operation, wakeUp } = await retryIn(scope, deps, id);
    await wakeUp();
    return operation;
  }
  const caller = callerTransaction(scope.store, options.transaction);
  const { operation, wakeUp } = await oneStepAtATime(caller, () => inSavepoint(scope.store.caps, caller, (tx) => retryIn(scope, deps, id, tx)));
  return { operation, afterCommit: once(wakeUp) };
}

/**
 * The owner retry of {@link retryOperation}, in transactions of its own — or, with `caller`, on the caller's
 * transaction (each try behind a savepoint of its own). Answers the operation after the change and what to run after
 * the commit: the wake-up and the `owner_retried` record.
 */
async function retryIn(scope: OwnerScope, deps: RetryDeps, id: unknown, caller?: TxContext): Promise<{ operation: OperationRow; wakeUp: () => Promise<void> }> {
  const ctx: DbContext = caller ?? scope.store;
  for (let race = 0; race < MAX_RACES; race++) {
    const row = await ownedOperation(ctx, scope.ownerUserId, id);
    nextStatus(row.id, row.status, 'owner_retry');
    if (row.retry_count >= deps.policy.maxManualRetries) throw new RetryLimitReachedError(row.id, deps.policy.maxManualRetries);
    const task = deps.registry.get(row.task_type);
    const policy = taskPolicy(task, deps.policy);
    // A new cycle never widens privacy: the stricter of the admitted snapshot and the owner's current mode.
    const owner = await recheckOwner(ctx, scope.ownerUserId, task, row.privacy_mode);
    if (!owner.entitled) throw new NotEntitledError(row.task_type);
    const pools = await prepareAdmissionPools(scope.store, deps.capacity, row.task_type, scope.ownerUserId, owner.plan, caller);
    const rate = deps.capacity.admissionRate(row.task_type, owner.plan);
    let changed: boolean;
    try {
      changed = await inOwnOrCallerTransaction(scope.store, caller, async (tx) => {
        if (task.exclusiveSubject) {
          const subject = { type: row.subject_type, id: row.subject_id };
          await assertSubjectFree(tx, task.exclusiveSubject, { ownerUserId: scope.ownerUserId, taskType: row.task_type, subject, rowLocks: scope.store.caps.rowLocks });
        }
        return requeueForRetry(
          tx,
          row,
          { maxAttempts: policy.maxAttempts, privacyMode: owner.privacyMode, deadlineMs: policy.deadlineMs, wakeMs: deps.policy.wakeupResendMs },
          async () => {
            if (rate) await takeAdmissionToken(tx, scope.store.caps, { taskType: row.task_type, ownerUserId: scope.ownerUserId }, rate);
            await reserveAdmission(tx, scope.store.caps.skipLocked, pools, row.id);
          },
        );
      });
    } catch (error) {
      if (error instanceof CapacityExhaustedError) {
        // "Full" from a pool whose rows vanished since this process last saw them: re-create them and try again.
        if (await restoreMissingPools(scope.store, pools, caller)) continue;
        recordLifecycle(deps, { event: 'capacity_rejected', operationId: row.id, taskType: row.task_type, pool: error.pool });
      }
      if (error instanceof RateLimitedError) recordLifecycle(deps, { event: 'rate_limited', operationId: row.id, taskType: row.task_type });
      throw error;
    }
    if (changed) {
      const wakeUp = async () => {
        await sendWakeup(deps, { v: 1, reason: 'owner_retry', operationId: row.id });
        recordLifecycle(deps, { event: 'owner_retried', operationId: row.id, taskType: row.task_type });
      };
      return { operation: await ownedOperation(ctx, scope.ownerUserId, row.id), wakeUp };
    }
  }
  throw new InvalidTransitionError(String(id), 'changing', 'owner_retry');
}

/**
 * The owner's operation `id`, read through `ctx` (the caller's transaction, or the store), as `getOperation` reads it.
 * @throws {OperationNotFoundError} when it does not exist or belongs to another owner.
 */
async function ownedOperation(ctx: DbContext, ownerUserId: string, id: unknown): Promise<OperationRow> {
  const parsed = OperationIdSchema.safeParse(id);
  const row = parsed.success ? await findOwnedOperation(ctx, ownerUserId, parsed.data) : undefined;
  if (!row) throw new OperationNotFoundError(String(id));
  return row;
}
