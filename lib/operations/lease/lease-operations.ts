import { releaseCapacity } from '../../capacity/capacity.js';
import { LeaseLostError, ScopeViolationError, ValidationError } from '../../errors.js';
import { GO_ALONE, GroupCommit } from '../../db/group-commit.js';
import type { Store } from '../../db/store.js';
import { inTransaction } from '../../db/transaction.js';
import type { ClaimedOperation } from './claim-operation.js';
import { FailureCode, type FailureCode as FailureCodeValue } from '../lifecycle/failure-code.js';
import { FieldLimits, truncate } from '../../validation/field-limits.js';
import { insertTerminalNotifications } from '../store/notification.repository.js';
import { findLeaseStates, findOwnedOperation, lockLiveLeases, updateManyUnderLease, updateUnderLease } from '../store/operation.repository.js';
import type { OperationStatus } from '../lifecycle/operation-status.js';
import type { TaskCompletion } from '../../tasks/task-definition.js';
import { assertOwnerScope, type OwnerScope } from '../scopes.js';

function assertLeaseInScope(scope: OwnerScope, lease: ClaimedOperation): void {
  assertOwnerScope(scope);
  if (lease.ownerUserId !== scope.ownerUserId) throw new ScopeViolationError('The lease belongs to another owner scope.');
}

/** Progress to record with a heartbeat: percent 0–100, stage at most 64 characters. */
export interface Progress {
  readonly percent: number;
  readonly stage?: string | undefined;
}

/**
 * Extends the lease to `leaseMs` past the database clock, optionally recording progress, and reports whether the
 * owner has asked to cancel (DESIGN §2: the worker sees a cancel at its next heartbeat).
 * @throws {LeaseLostError} when the token is stale/wrong or the lease expired on the database clock; nothing changed.
 * @throws {ValidationError} for out-of-range progress.
 * @throws {ScopeViolationError} from a non-owner scope or another owner's scope.
 */
export async function heartbeat(scope: OwnerScope, lease: ClaimedOperation, progress?: Progress): Promise<{ cancelRequested: boolean }> {
  assertLeaseInScope(scope, lease);
  if (progress) validateProgress(progress);
  const changed = await updateUnderLease(scope.store, lease, (now) => ({
    lease_expires_at: scope.store.timeAt(lease.leaseMs),
    heartbeat_at: now,
    ...(progress ? { progress_percent: progress.percent, progress_stage: progress.stage ?? null } : {}),
  }));
  if (changed !== 1) throw new LeaseLostError(lease.operationId);
  const row = await findOwnedOperation(scope.store, scope.ownerUserId, lease.operationId);
  return { cancelRequested: row?.cancel_requested_at != null };
}

/**
 * Whether the owner has asked to cancel the operation this lease runs (DESIGN §2, §5: the worker rechecks cancellation
 * before it runs the task). One read, no write: the claim has just set the lease. Rechecks arriving while another of
 * this process is reading share the next read (a {@link GroupCommit} of reads: one `SELECT` by id and owner for all).
 * @throws {LeaseLostError} when the operation is no longer running under this lease token.
 * @throws {ScopeViolationError} from a non-owner scope or another owner's scope.
 */
export async function cancelRequestedUnderLease(scope: OwnerScope, lease: ClaimedOperation): Promise<boolean> {
  assertLeaseInScope(scope, lease);
  const state = await recheckGroupOf(scope.store).submit(lease);
  if (state === 'lost') throw new LeaseLostError(lease.operationId);
  return state === 'cancel_requested';
}

/** What a recheck found: the lease is gone, or it holds and a cancel is (not) requested. */
type LeaseState = 'lost' | 'cancel_requested' | 'live';

/** The lease state of each lease, read in one statement (owner-scoped per lease). */
async function leaseStatesOf(store: Store, leases: readonly ClaimedOperation[]): Promise<LeaseState[]> {
  const rows = await findLeaseStates(store, leases.map((lease) => ({ id: lease.operationId, ownerUserId: lease.ownerUserId })));
  return leases.map((lease) => {
    const row = rows.find((r) => r.id === lease.operationId && r.owner_user_id === lease.ownerUserId);
    if (!row || row.status !== 'running' || row.lease_token !== lease.leaseToken) return 'lost';
    return row.cancel_requested_at !== null ? 'cancel_requested' : 'live';
  });
}

/** Per store: pre-run rechecks read in groups (see {@link cancelRequestedUnderLease}). */
const recheckGroups = new WeakMap<Store, GroupCommit<ClaimedOperation, LeaseState>>();

function recheckGroupOf(store: Store): GroupCommit<ClaimedOperation, LeaseState> {
  let group = recheckGroups.get(store);
  if (!group) {
    group = new GroupCommit<ClaimedOperation, LeaseState>(
      (leases) => leaseStatesOf(store, leases),
      async (lease) => (await leaseStatesOf(store, [lease]))[0] as LeaseState,
      { maxConcurrent: 2 },
    );
    recheckGroups.set(store, group);
  }
  return group;
}

function validateProgress(progress: Progress): void {
  const { min, max } = FieldLimits.progressPercent;
  if (!Number.isInteger(progress.percent) || progress.percent < min || progress.percent > max) {
    throw new ValidationError('Invalid progress.', [{ path: 'percent', message: 'must be an integer 0–100' }]);
  }
  if (progress.stage !== undefined && (progress.stage.length === 0 || progress.stage.length > FieldLimits.progressStage)) {
    throw new ValidationError('Invalid progress.', [{ path: 'stage', message: 'must be 1–64 characters' }]);
  }
}

/**
 * Ends a terminal transition under the lease in one transaction: the guarded update, exactly one notification,
 * the lease cleared and every capacity slot released (DESIGN §2, §4).
 */
async function finishUnderLease(
  scope: OwnerScope,
  lease: ClaimedOperation,
  status: TerminalStatus,
  failure: { code: FailureCodeValue; message: string } | null,
  requireCancelRequested = false,
  publish?: TaskCompletion['publish'],
): Promise<void> {
  await inTransaction(scope.store, async (tx) => {
    const changed = await updateUnderLease(tx, lease, terminalChanges(status, failure), requireCancelRequested);
    if (changed !== 1) throw new LeaseLostError(lease.operationId);
    await insertTerminalNotifications(tx, [lease.operationId]);
    await releaseCapacity(tx, [lease.operationId], 'all');
    if (publish) await publish(tx);
  });
}

type TerminalStatus = Extract<OperationStatus, 'succeeded' | 'failed' | 'cancelled'>;

/** The columns a terminal transition under the lease writes. */
function terminalChanges(status: TerminalStatus, failure: { code: FailureCodeValue; message: string } | null) {
  return (now: ReturnType<OwnerScope['store']['timeAt']>) => ({
    status,
    finished_at: now,
    lease_token: null,
    lease_expires_at: null,
    failure_code: failure?.code ?? null,
    failure_message: failure ? truncate(failure.message, FieldLimits.failureMessage) : null,
    ...(status === 'succeeded' ? { progress_percent: 100 } : {}),
  });
}

/** A completion waiting for its group (see {@link completeOperation}). */
interface PendingCompletion {
  readonly scope: OwnerScope;
  readonly lease: ClaimedOperation;
}

/** Thrown inside a group's transaction when a lease it locked did not update: the group rolls back, each goes alone. */
class GroupLeaseLost extends Error {}

/**
 * `running → succeeded` for several operations in one transaction: their rows whose lease holds are locked first
 * (`SKIP LOCKED`: a row another transaction holds is never waited for — that completion goes alone, after the group,
 * and so does one whose lease is lost, to get its own {@link LeaseLostError}); then one guarded UPDATE, their
 * notifications and the release of their capacity, all or nothing.
 */
async function finishSucceededTogether(group: readonly PendingCompletion[]): Promise<(void | typeof GO_ALONE)[]> {
  const store = (group[0] as PendingCompletion).scope.store;
  return inTransaction(store, async (tx) => {
    const held = new Set(await lockLiveLeases(tx, group.map((pending) => pending.lease), store.caps.skipLocked));
    const leases = group.map((pending) => pending.lease).filter((lease) => held.has(lease.operationId));
    if (leases.length > 0) {
      if ((await updateManyUnderLease(tx, leases, terminalChanges('succeeded', null))) !== leases.length) throw new GroupLeaseLost();
      const ids = leases.map((lease) => lease.operationId);
      await insertTerminalNotifications(tx, ids);
      await releaseCapacity(tx, ids, 'all');
    }
    return group.map((pending) => (held.has(pending.lease.operationId) ? undefined : GO_ALONE));
  });
}

/** Per store: completions without a published result commit in groups (see {@link completeOperation}). */
const completionGroups = new WeakMap<Store, GroupCommit<PendingCompletion>>();

function completionGroupOf(store: Store): GroupCommit<PendingCompletion> {
  let group = completionGroups.get(store);
  if (!group) {
    // Two groups at once, as for claims: one slow commit does not hold every completion of the process back.
    group = new GroupCommit<PendingCompletion>(finishSucceededTogether, ({ scope, lease }) => finishUnderLease(scope, lease, 'succeeded', null), {
      maxConcurrent: 2,
    });
    completionGroups.set(store, group);
  }
  return group;
}

/** `running → cancelled` only if a cancel was requested (guarded in SQL, no read-then-write). True when it happened. */
async function finishCancelledIfRequested(scope: OwnerScope, lease: ClaimedOperation): Promise<boolean> {
  try {
    await finishUnderLease(scope, lease, 'cancelled', null, true);
    return true;
  } catch (error) {
    if (error instanceof LeaseLostError) return false;
    throw error;
  }
}

/**
 * `running → succeeded`, with its notification and the task's published result (if it returned a
 * {@link TaskCompletion}), in one transaction: the result exists if and only if the operation succeeded.
 *
 * Completions without a published result go through a per-store {@link GroupCommit}: those arriving in the same
 * event-loop turn, or while another completion of this process is committing, share one transaction (one guarded
 * UPDATE for all, their notifications, their capacity), so under load a completion costs a fraction of a transaction
 * (issue 7). The outcome is each operation's own: the group first locks its rows whose lease holds with `SKIP LOCKED`,
 * so it never waits on a row another transaction holds; a completion whose lease is lost or whose row is held elsewhere
 * completes alone, after the group, and a lost lease throws only for its own operation. A lone completion waits one
 * event-loop turn (or, when two groups are committing, for one of them).
 * @throws {LeaseLostError} when the lease is gone; nothing changed and nothing was published.
 * @throws whatever `completion.publish` throws; nothing changed.
 */
export async function completeOperation(scope: OwnerScope, lease: ClaimedOperation, completion?: TaskCompletion): Promise<void> {
  assertLeaseInScope(scope, lease);
  if (completion?.publish) {
    await finishUnderLease(scope, lease, 'succeeded', null, false, completion.publish);
    return;
  }
  await completionGroupOf(scope.store).submit({ scope, lease });
}

/**
 * `running → cancelled` after the owner asked to cancel and the worker stopped (DESIGN §2).
 * @throws {LeaseLostError} when the lease is gone or no cancel was requested; nothing changed.
 */
export async function acknowledgeCancel(scope: OwnerScope, lease: ClaimedOperation): Promise<void> {
  assertLeaseInScope(scope, lease);
  await finishUnderLease(scope, lease, 'cancelled', null, true);
}

/**
 * How an attempt failed (DESIGN §5 classification). `entitlement_revoked`: the owner lost the entitlement before the
 * run, which fails closed at once.
 */
export type FailureKind = 'retryable' | 'permanent' | 'timeout' | 'entitlement_revoked' | 'invalid_model_output' | 'model_rejected' | 'subject_not_found';

/** Failure kinds that end the operation at once, whatever attempts are left. */
const FINAL_KINDS: ReadonlySet<FailureKind> = new Set<FailureKind>(['permanent', 'entitlement_revoked', 'invalid_model_output', 'model_rejected', 'subject_not_found']);

/**
 * What {@link failOperation} decided: `failed` with its bounded code; `waiting_for_retry`, claimable again in
 * `retryInMs` **milliseconds**; or `cancelled` (the owner's cancel won).
 */
export type FailureOutcome =
  | { readonly status: 'failed'; readonly failureCode: FailureCodeValue }
  | { readonly status: 'waiting_for_retry'; readonly retryInMs: number }
  | { readonly status: 'cancelled' };

/**
 * Records a failed attempt (DESIGN §2): a retryable failure or timeout with attempts left → `waiting_for_retry`,
 * claimable `retryDelayMs` after the database clock; a permanent failure, or none left → `failed` with its code
 * (`permanent_error`, `timeout`, `retries_exhausted`) and one notification. When the owner asked to cancel while the
 * attempt ran, the operation becomes `cancelled` instead — as at lease expiry, the owner's cancel wins over any further
 * attempt. `message` is truncated to 512 characters and is operator-only.
 * @param retryDelayMs delay before the next attempt, in ms (see `retryDelayMs`).
 * @param wakeAfterMs when, from now, the sweeper should send a wake-up if none arrived, in ms.
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 */
export async function failOperation(
  scope: OwnerScope,
  lease: ClaimedOperation,
  failure: { kind: FailureKind; message: string },
  retryDelayMs: number,
  wakeAfterMs: number,
): Promise<FailureOutcome> {
  assertLeaseInScope(scope, lease);
  if (await finishCancelledIfRequested(scope, lease)) return { status: 'cancelled' };
  const attemptsLeft = lease.attempt < lease.maxAttempts;
  const final = FINAL_KINDS.has(failure.kind) || !attemptsLeft;
  if (final) {
    const codes: Record<FailureKind, FailureCodeValue> = {
      permanent: FailureCode.permanentError,
      entitlement_revoked: FailureCode.entitlementRevoked,
      timeout: FailureCode.timeout,
      retryable: FailureCode.retriesExhausted,
      invalid_model_output: FailureCode.invalidModelOutput,
      model_rejected: FailureCode.modelRejected,
      subject_not_found: FailureCode.subjectNotFound,
    };
    const code = codes[failure.kind];
    await finishUnderLease(scope, lease, 'failed', { code, message: failure.message });
    return { status: 'failed', failureCode: code };
  }
  await inTransaction(scope.store, async (tx) => {
    const changed = await updateUnderLease(tx, lease, () => ({
      status: 'waiting_for_retry',
      lease_token: null,
      lease_expires_at: null,
      available_at: tx.timeAt(retryDelayMs),
      wake_at: tx.timeAt(wakeAfterMs),
      failure_message: truncate(failure.message, FieldLimits.failureMessage),
    }));
    if (changed !== 1) throw new LeaseLostError(lease.operationId);
    // The operation keeps its admission slots while it waits; only the execution (route) slot is given back.
    await releaseCapacity(tx, [lease.operationId], 'execution');
  });
  return { status: 'waiting_for_retry', retryInMs: retryDelayMs };
}

/**
 * `running → waiting_for_external_fallback` (DESIGN §2, §5): the local model route failed retryably and the operation
 * may use the external route, so it becomes claimable at once — by a claimer holding the external route — and is due a
 * wake-up `wakeAfterMs` from now if none arrived. The execution (route) slot is given back; admission slots are kept.
 * As in {@link failOperation}, an owner's cancel requested meanwhile wins: the operation becomes `cancelled`.
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 */
export async function fallBackToExternal(scope: OwnerScope, lease: ClaimedOperation, message: string, wakeAfterMs: number): Promise<'cancelled' | 'waiting_for_external_fallback'> {
  assertLeaseInScope(scope, lease);
  if (await finishCancelledIfRequested(scope, lease)) return 'cancelled';
  await inTransaction(scope.store, async (tx) => {
    const changed = await updateUnderLease(tx, lease, (now) => ({
      status: 'waiting_for_external_fallback',
      lease_token: null,
      lease_expires_at: null,
      available_at: now,
      wake_at: tx.timeAt(wakeAfterMs),
      failure_message: truncate(message, FieldLimits.failureMessage),
    }));
    if (changed !== 1) throw new LeaseLostError(lease.operationId);
    await releaseCapacity(tx, [lease.operationId], 'execution');
  });
  return 'waiting_for_external_fallback';
}
