import { LeaseLostError } from '../../errors.js';
import { GO_ALONE, GroupCommit } from '../../db/group-commit.js';
import type { Store } from '../../db/store.js';
import { inTransaction } from '../../db/transaction.js';
import { viaRoutine } from '../../db/server-routine.js';
import { callCompleteOperations } from '../lifecycle/complete-procedure.repository.js';
import { callFailAttempt } from '../lifecycle/fail-procedure.repository.js';
import type { TaskCompletion } from '../../tasks/task-definition.js';
import { attemptOutcome, type FailureKind, type UncancelledOutcome } from '../lifecycle/attempt-outcome.js';
import type { FailureCode } from '../lifecycle/failure-code.js';
import { lockLiveLeases } from '../lifecycle/lifecycle.repository.js';
import { acknowledgeCancelUnderLease, completeUnderLease, failAttempt } from '../lifecycle/transitions.js';
import { findLeaseStates } from '../store/operation.repository.js';
import { assertLeaseInScope, type OwnerScope } from '../scopes.js';
import type { ClaimedOperation } from './claim-operation.js';

/**
 * What a worker writes under its lease after the run (docs/design.md §2, §3): the pre-run cancellation recheck, the completion,
 * the acknowledgement of a cancel and a failed attempt's outcome. Each runs in its own transaction and moves the
 * operation through `lifecycle/transitions.ts`, the one place that writes a status; a lost lease is a
 * {@link LeaseLostError} and changes nothing.
 */

/**
 * Whether the owner has asked to cancel the operation this lease runs (docs/design.md §2, §5: the worker rechecks cancellation
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

/** Thrown inside a completion group whose locked leases all lapsed before its UPDATE: the group rolls back. */
class GroupLeasesLapsed extends Error {
  constructor() {
    super('every locked lease of the completion group lapsed before its update');
    this.name = 'GroupLeasesLapsed';
  }
}

/** A completion waiting for its group (see {@link completeOperation}). */
interface PendingCompletion {
  readonly scope: OwnerScope;
  readonly lease: ClaimedOperation;
}

/**
 * What a completion learned besides success: whether the operation's owner still has a due operation of its task type
 * (the worker then wakes a claimer for it: the owner's running slot just freed), or `undefined` when the completion did
 * not look (in-process, or with a published result) and the worker must ask (`hasDueOperation`).
 */
export interface CompletionResult {
  readonly ownerHasDueWork: boolean | undefined;
}

/** A completion that did not look for the owner's due work. */
const NOT_LOOKED: CompletionResult = Object.freeze({ ownerHasDueWork: undefined });

/**
 * `running → succeeded` for several operations in one transaction: their rows whose lease holds are locked first
 * (`SKIP LOCKED`: a row another transaction holds is never waited for — that completion goes alone, after the group,
 * and so does one whose lease is lost, to get its own {@link LeaseLostError}); then one guarded UPDATE, their
 * notifications and the release of their capacity, all or nothing (`completeUnderLease`). On MariaDB the whole group is
 * one round trip, `CALL complete_operations_v2` (`caps.serverRoutines`; docs/design.md §9), which makes the same
 * decision server-side and also answers which owners still have due work; SQLite runs the statements here.
 */
async function completeTogether(group: readonly PendingCompletion[]): Promise<(CompletionResult | typeof GO_ALONE)[]> {
  const store = (group[0] as PendingCompletion).scope.store;
  const leases = group.map((pending) => pending.lease);
  return viaRoutine(
    store,
    async () => {
      const answer = await callCompleteOperations(store, leases, 'skip');
      if (answer.outcome === 'lapsed') throw new GroupLeasesLapsed();
      return resultsOf(leases, answer.held, answer.due);
    },
    () => completeTogetherInProcess(store, leases),
  );
}

/** {@link completeTogether} statement by statement (SQLite, or a routine not there yet). */
async function completeTogetherInProcess(store: Store, leases: readonly ClaimedOperation[]): Promise<(CompletionResult | typeof GO_ALONE)[]> {
  const held = await inTransaction(store, async (tx) => {
    const locked = new Set(await lockLiveLeases(tx, leases, store.caps.skipLocked));
    const live = leases.filter((lease) => locked.has(lease.operationId));
    // A lease that stopped holding under its lock — one of them (TransitionRaceError) or all (false) — rolls the group
    // back, and each completion goes alone to get its own outcome.
    if (live.length > 0 && !(await completeUnderLease(tx, live))) throw new GroupLeasesLapsed();
    return [...locked];
  });
  return leases.map((lease) => (held.includes(lease.operationId) ? NOT_LOOKED : GO_ALONE));
}

/** Each lease's result from the routine's answer: completed (due or not), or left out (`GO_ALONE`). */
function resultsOf(leases: readonly ClaimedOperation[], held: readonly string[], due: readonly string[]): (CompletionResult | typeof GO_ALONE)[] {
  return leases.map((lease) => (held.includes(lease.operationId) ? { ownerHasDueWork: due.includes(lease.operationId) } : GO_ALONE));
}

/**
 * One completion in its own transaction, with the task's published result (if any) in the same transaction. Without a
 * result to publish, on MariaDB, one `CALL complete_operations_v2` that waits for the row's lock (as the guarded
 * UPDATE would); with one, or on SQLite, the statements here.
 * @throws {LeaseLostError} when the lease is gone; nothing changed and nothing was published.
 */
async function completeAlone(scope: OwnerScope, lease: ClaimedOperation, publish?: TaskCompletion['publish']): Promise<CompletionResult> {
  const inProcess = async (): Promise<CompletionResult> => {
    await inTransaction(scope.store, async (tx) => {
      if (!(await completeUnderLease(tx, [lease]))) throw new LeaseLostError(lease.operationId);
      if (publish) await publish(tx);
    });
    return NOT_LOOKED;
  };
  if (publish) return inProcess();
  return viaRoutine(
    scope.store,
    async () => {
      const answer = await callCompleteOperations(scope.store, [lease], 'wait');
      if (answer.outcome === 'lapsed' || !answer.held.includes(lease.operationId)) throw new LeaseLostError(lease.operationId);
      return { ownerHasDueWork: answer.due.includes(lease.operationId) };
    },
    inProcess,
  );
}

/** Per store: completions without a published result commit in groups (see {@link completeOperation}). */
const completionGroups = new WeakMap<Store, GroupCommit<PendingCompletion, CompletionResult>>();

function completionGroupOf(store: Store): GroupCommit<PendingCompletion, CompletionResult> {
  let group = completionGroups.get(store);
  if (!group) {
    // Two groups at once, as for claims: one slow commit does not hold every completion of the process back.
    group = new GroupCommit<PendingCompletion, CompletionResult>(completeTogether, ({ scope, lease }) => completeAlone(scope, lease), { maxConcurrent: 2 });
    completionGroups.set(store, group);
  }
  return group;
}

/**
 * `running → succeeded`, with its notification and the task's published result (if it returned a
 * {@link TaskCompletion}), in one transaction: the result exists if and only if the operation succeeded. A cancel the
 * owner requested while the run went on does not undo a success: the result stands.
 *
 * Completions without a published result go through a per-store {@link GroupCommit}: those arriving in the same
 * event-loop turn, or while another completion of this process is committing, share one transaction (one guarded
 * UPDATE for all, their notifications, their capacity), so under load a completion costs a fraction of a transaction.
 * The outcome is each operation's own: the group first locks its rows whose lease holds with `SKIP LOCKED`, so it never
 * waits on a row another transaction holds; a completion whose lease is lost or whose row is held elsewhere completes
 * alone, after the group, and a lost lease throws only for its own operation. A lone completion waits one event-loop
 * turn (or, when two groups are committing, for one of them). On MariaDB a group, and a completion alone without a
 * published result, is one round trip (`complete_operations_v2`).
 * @returns whether the owner still has due work of the task type, when the completion looked (see {@link CompletionResult}).
 * @throws {LeaseLostError} when the lease is gone; nothing changed and nothing was published.
 * @throws whatever `completion.publish` throws; nothing changed.
 */
export async function completeOperation(scope: OwnerScope, lease: ClaimedOperation, completion?: TaskCompletion): Promise<CompletionResult> {
  assertLeaseInScope(scope, lease);
  if (completion?.publish) return completeAlone(scope, lease, completion.publish);
  return completionGroupOf(scope.store).submit({ scope, lease });
}

/**
 * `running → cancelled` after the owner asked to cancel and the worker stopped (docs/design.md §2).
 * @throws {LeaseLostError} when the lease is gone or no cancel was requested; nothing changed.
 */
export async function acknowledgeCancel(scope: OwnerScope, lease: ClaimedOperation): Promise<void> {
  assertLeaseInScope(scope, lease);
  await inTransaction(scope.store, async (tx) => {
    if (!(await acknowledgeCancelUnderLease(tx, lease))) throw new LeaseLostError(lease.operationId);
  });
}

/**
 * What a failed attempt made of its operation: `failed` with its bounded code; `waiting_for_retry`, claimable again in
 * `retryInMs` **milliseconds**; `waiting_for_external_fallback`; or `cancelled` (the owner's cancel won).
 */
export type FailureOutcome =
  | { readonly status: 'failed'; readonly failureCode: FailureCode }
  | { readonly status: 'waiting_for_retry'; readonly retryInMs: number }
  | { readonly status: 'waiting_for_external_fallback' }
  | { readonly status: 'cancelled' };

/**
 * Writes a failed attempt's outcome, as `attemptOutcome` decided it (with `cancelRequested: false`), in one
 * transaction: when the owner's cancel was recorded meanwhile — even a moment before this write — the operation becomes
 * `cancelled` instead (`failAttempt`: the guarded statement decides, not an earlier read). `message` is operator-only,
 * truncated to 512 characters.
 * @param wakeAfterMs when, from now, the sweeper should send a wake-up for a waiting outcome if none arrived, in ms.
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 */
export async function recordFailedAttempt(
  scope: OwnerScope,
  lease: ClaimedOperation,
  decided: UncancelledOutcome,
  message: string,
  wakeAfterMs: number,
): Promise<FailureOutcome> {
  assertLeaseInScope(scope, lease);
  // On MariaDB one round trip, `CALL fail_attempt_v2` (docs/design.md §9): the same decision as `failAttempt`.
  const status = await viaRoutine(
    scope.store,
    () => callFailAttempt(scope.store, lease, decided, message, wakeAfterMs),
    () => inTransaction(scope.store, (tx) => failAttempt(tx, lease, decided, message, wakeAfterMs)),
  );
  if (status === null) throw new LeaseLostError(lease.operationId);
  if (status === 'cancelled') return { status };
  if (decided.status === 'waiting_for_retry') return { status: decided.status, retryInMs: decided.retryInMs };
  return decided.status === 'failed' ? { status: decided.status, failureCode: decided.failureCode } : { status: decided.status };
}

/**
 * Records a failed attempt (docs/design.md §2) as {@link attemptOutcome} decides it: a retryable failure or timeout with
 * attempts left → `waiting_for_retry`, claimable `retryDelayMs` after the database clock; a final kind, or none left →
 * `failed` with its code (`permanent_error`, `timeout`, `retries_exhausted`, …) and one notification. The owner's cancel
 * requested while the attempt ran wins: `cancelled` (see {@link recordFailedAttempt}).
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
  const decided = attemptOutcome({ kind: failure.kind, attempt: lease.attempt, maxAttempts: lease.maxAttempts, cancelRequested: false, retryInMs: retryDelayMs });
  return recordFailedAttempt(scope, lease, decided, failure.message, wakeAfterMs);
}

/**
 * `running → waiting_for_external_fallback` (docs/design.md §2, §5): the local model route failed retryably and the operation
 * may use the external route, so it becomes claimable at once — by a claimer holding the external route — and is due a
 * wake-up `wakeAfterMs` from now if none arrived. The execution (route) slot is given back; admission slots are kept.
 * The caller decided the fallback (the worker: {@link attemptOutcome} with `externalFallback`); an owner's cancel
 * requested meanwhile wins (`cancelled`).
 * @throws {LeaseLostError} when the lease is gone; nothing changed.
 */
export async function fallBackToExternal(scope: OwnerScope, lease: ClaimedOperation, message: string, wakeAfterMs: number): Promise<FailureOutcome['status']> {
  return (await recordFailedAttempt(scope, lease, { status: 'waiting_for_external_fallback', event: 'external_fallback' }, message, wakeAfterMs)).status;
}
