import { LeaseLostError, ValidationError } from '../../errors.js';
import { FieldLimits } from '../../validation/field-limits.js';
import { parseDbTime } from '../../db/db-time.js';
import { readLeaseEnd, updateUnderLease } from '../lifecycle/lifecycle.repository.js';
import { assertLeaseInScope, type OwnerScope } from '../scopes.js';
import type { ClaimedOperation } from './claim-operation.js';

/** Progress to record with a heartbeat: percent 0–100, stage at most 64 characters. */
export interface Progress {
  readonly percent: number;
  readonly stage?: string | undefined;
}

/** What a heartbeat learned: whether the owner asked to cancel, and how long the lease it set has left. */
export interface HeartbeatAck {
  readonly cancelRequested: boolean;
  /**
   * The lease's end minus the database clock's now, in **milliseconds**, both read by the database in one statement
   * just after the extension committed: the lease lasts at least this long from any moment before the heartbeat was
   * sent (the worker's self-fence counts from that moment; docs/design.md §3).
   */
  readonly leaseRemainingMs: number;
}

/**
 * Extends the lease to `leaseMs` past the database clock, optionally recording progress, and reports whether the
 * owner has asked to cancel (docs/design.md §2: the worker sees a cancel at its next heartbeat) and how long the lease
 * now has left as the database computed it.
 * @throws {LeaseLostError} when the token is stale/wrong or the lease expired on the database clock; nothing changed.
 * @throws {ValidationError} for out-of-range progress.
 * @throws {ScopeViolationError} from a non-owner scope or another owner's scope.
 */
export async function heartbeat(scope: OwnerScope, lease: ClaimedOperation, progress?: Progress): Promise<HeartbeatAck> {
  assertLeaseInScope(scope, lease);
  if (progress) validateProgress(progress);
  const changed = await updateUnderLease(scope.store, lease, (now) => ({
    lease_expires_at: scope.store.timeAt(lease.leaseMs),
    heartbeat_at: now,
    ...(progress ? { progress_percent: progress.percent, progress_stage: progress.stage ?? null } : {}),
  }));
  if (changed !== 1) throw new LeaseLostError(lease.operationId);
  const row = await readLeaseEnd(scope.store, lease);
  // The lease end is gone only if another party took the operation over between the two statements: no time left.
  const remaining = row?.lease_expires_at ? parseDbTime(row.lease_expires_at).getTime() - parseDbTime(row.db_now).getTime() : 0;
  return { cancelRequested: row?.cancel_requested_at != null, leaseRemainingMs: Math.max(0, remaining) };
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

