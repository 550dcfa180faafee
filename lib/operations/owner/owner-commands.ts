import { prepareAdmissionPools, releaseCapacity, reserveAdmission, restoreMissingPools } from '../../capacity/capacity.js';
import { CapacityExhaustedError, InvalidTransitionError, NotEntitledError, OperationNotFoundError, RetryLimitReachedError } from '../../errors.js';
import { silentLogger } from '../../logger.js';
import { recordLifecycle, type Telemetry } from '../../observability/lifecycle-events.js';
import { noopMetrics } from '../../observability/metrics.js';
import { isEntitled, loadOwnerSettings } from '../../owners/owner-settings.js';
import { inTransaction } from '../../db/transaction.js';
import type { TaskRegistry } from '../../tasks/task-registry.js';
import type { AdmissionDeps } from '../admission/admit-operation.js';
import { sendWakeup } from '../../queue/send-wakeup.js';
import { insertTerminalNotifications } from '../store/notification.repository.js';
import { findOwnedOperation, updateOwnedInStatus, type OperationRow } from '../store/operation.repository.js';
import { taskPolicy } from '../operation-policy.js';
import { nextStatus, TRANSITIONS } from '../lifecycle/operation-status.js';
import { getOperation } from './owner-reads.js';
import { stricterPrivacy } from '../../owners/privacy-mode.js';
import { assertSubjectFree } from '../admission/exclusive-subject.js';
import { assertOwnerScope, type OwnerScope } from '../scopes.js';

/** Guarded updates that lose a race are re-decided from a fresh read at most this many times. */
const MAX_RACES = 5;

/** Where an owner command records nothing: for callers without telemetry. */
const UNRECORDED: Telemetry = Object.freeze({ logger: silentLogger, metrics: noopMetrics });

/**
 * Owner cancel (DESIGN §2): a waiting operation (`queued`, `waiting_*`) becomes `cancelled` at once, with its
 * notification, in one transaction; a `running` one keeps running with `cancel_requested_at` set, and its worker
 * aborts at its next heartbeat. Cancelling a cancelled operation changes nothing and returns it.
 * A change is recorded to `telemetry`: `operation_cancelled` (by `owner`, `OperationCancelled`) or `cancel_requested`.
 * @param telemetry where the change is logged and counted. @default nowhere
 * @returns the operation after the change.
 * @throws {OperationNotFoundError} unknown id or another owner's operation (404).
 * @throws {InvalidTransitionError} already `succeeded` or `failed` (409).
 */
export async function cancelOperation(scope: OwnerScope, id: unknown, telemetry: Telemetry = UNRECORDED): Promise<OperationRow> {
  assertOwnerScope(scope);
  for (let race = 0; race < MAX_RACES; race++) {
    const row = await getOperation(scope, id);
    if (row.status === 'cancelled') return row;
    if (row.status === 'running') {
      nextStatus(row.id, row.status, 'request_cancel');
      // In a transaction for its retries: even this one UPDATE can deadlock with a completion of the same row (1213).
      const changed = await inTransaction(scope.store, (tx) =>
        updateOwnedInStatus(tx, scope.ownerUserId, row.id, ['running'], (now) => ({ cancel_requested_at: row.cancel_requested_at ?? now })),
      );
      if (changed !== 1) continue;
      if (row.cancel_requested_at === null) recordLifecycle(telemetry, { event: 'cancel_requested', operationId: row.id, taskType: row.task_type });
      return reread(scope, row.id);
    }
    nextStatus(row.id, row.status, 'owner_cancel');
    const changed = await inTransaction(scope.store, async (tx) => {
      const n = await updateOwnedInStatus(tx, scope.ownerUserId, row.id, TRANSITIONS.owner_cancel.from, (now) => ({
        status: 'cancelled',
        cancel_requested_at: now,
        finished_at: now,
        available_at: null,
        wake_at: null,
      }));
      if (n === 1) {
        await insertTerminalNotifications(tx, [row.id]);
        await releaseCapacity(tx, [row.id], 'all');
      }
      return n;
    });
    if (changed === 1) {
      recordLifecycle(telemetry, { event: 'operation_cancelled', by: 'owner', operationId: row.id, taskType: row.task_type });
      return reread(scope, row.id);
    }
  }
  throw new InvalidTransitionError(String(id), 'changing', 'owner_cancel');
}

/** What an owner retry needs. */
export interface RetryDeps extends AdmissionDeps {
  readonly registry: TaskRegistry;
}

/**
 * Owner retry (DESIGN §2): `failed`/`cancelled` → `queued` with a fresh attempt budget and a new deadline, reserving
 * admission capacity again in the same transaction (as admission does, after rechecking entitlement), then a wake-up
 * after the commit. Bounded by `MAX_MANUAL_RETRIES` per operation. Recorded as `owner_retried`; a full pool as
 * `capacity_rejected` (with the operation id and the pool kind, `CapacityRejected`).
 * @returns the operation after the change.
 * @throws {OperationNotFoundError} unknown id or another owner's operation (404).
 * @throws {InvalidTransitionError} the operation is not `failed` or `cancelled` (409).
 * @throws {RetryLimitReachedError} the manual-retry budget is used up (409).
 * @throws {NotEntitledError} the owner is no longer entitled to the task type (403).
 * @throws {CapacityExhaustedError} a per-owner or global limit is full (429); nothing changed.
 * @throws {SubjectBusyError} the task type has an exclusive subject and another operation is active on it (409).
 * @throws the subject's not-found error (404) when an exclusive-subject task's subject is gone.
 */
export async function retryOperation(scope: OwnerScope, deps: RetryDeps, id: unknown): Promise<OperationRow> {
  assertOwnerScope(scope);
  for (let race = 0; race < MAX_RACES; race++) {
    const row = await getOperation(scope, id);
    nextStatus(row.id, row.status, 'owner_retry');
    if (row.retry_count >= deps.policy.maxManualRetries) throw new RetryLimitReachedError(row.id, deps.policy.maxManualRetries);
    const task = deps.registry.get(row.task_type);
    const policy = taskPolicy(task, deps.policy);
    const settings = await loadOwnerSettings(scope.store, scope.ownerUserId);
    if (!isEntitled(task, settings)) throw new NotEntitledError(row.task_type);
    const pools = await prepareAdmissionPools(scope.store, deps.capacity, row.task_type, scope.ownerUserId, settings.plan);
    let changed: number;
    try {
      changed = await inTransaction(scope.store, async (tx) => {
        if (task.exclusiveSubject) {
          const subject = { type: row.subject_type, id: row.subject_id };
          await assertSubjectFree(tx, task.exclusiveSubject, { ownerUserId: scope.ownerUserId, taskType: row.task_type, subject, rowLocks: scope.store.caps.rowLocks });
        }
        const n = await updateOwnedInStatus(tx, scope.ownerUserId, row.id, [row.status], (now) => ({
          status: 'queued',
          attempt: 0,
          max_attempts: policy.maxAttempts,
          retry_count: row.retry_count + 1,
          lease_token: null,
          lease_expires_at: null,
          heartbeat_at: null,
          cancel_requested_at: null,
          progress_percent: 0,
          progress_stage: null,
          failure_code: null,
          failure_message: null,
          started_at: null,
          finished_at: null,
          available_at: now,
          // A new cycle never widens privacy: the stricter of the admitted snapshot and the owner's current mode.
          privacy_mode: stricterPrivacy(row.privacy_mode, settings.privacyMode),
          deadline_at: tx.timeAt(policy.deadlineMs),
          wake_at: tx.timeAt(deps.policy.wakeupResendMs),
        }), row.retry_count);
        if (n === 1) await reserveAdmission(tx, scope.store.caps.skipLocked, pools, row.id);
        return n;
      });
    } catch (error) {
      if (error instanceof CapacityExhaustedError) {
        // "Full" from a pool whose rows vanished since this process last saw them: re-create them and try again.
        if (await restoreMissingPools(scope.store, pools)) continue;
        recordLifecycle(deps, { event: 'capacity_rejected', operationId: row.id, taskType: row.task_type, pool: error.pool });
      }
      throw error;
    }
    if (changed === 1) {
      await sendWakeup(deps, { v: 1, reason: 'owner_retry', operationId: row.id });
      recordLifecycle(deps, { event: 'owner_retried', operationId: row.id, taskType: row.task_type });
      return reread(scope, row.id);
    }
  }
  throw new InvalidTransitionError(String(id), 'changing', 'owner_retry');
}

async function reread(scope: OwnerScope, id: string): Promise<OperationRow> {
  const row = await findOwnedOperation(scope.store, scope.ownerUserId, id);
  if (!row) throw new OperationNotFoundError(id);
  return row;
}
