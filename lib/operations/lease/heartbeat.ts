import { LeaseLostError, ValidationError } from '../../errors.js';
import { FieldLimits } from '../../validation/field-limits.js';
import { updateUnderLease } from '../lifecycle/lifecycle.repository.js';
import { findOwnedOperation } from '../store/operation.repository.js';
import { assertLeaseInScope, type OwnerScope } from '../scopes.js';
import type { ClaimedOperation } from './claim-operation.js';

/** Progress to record with a heartbeat: percent 0–100, stage at most 64 characters. */
export interface Progress {
  readonly percent: number;
  readonly stage?: string | undefined;
}

/**
 * Extends the lease to `leaseMs` past the database clock, optionally recording progress, and reports whether the
 * owner has asked to cancel (docs/design.md §2: the worker sees a cancel at its next heartbeat).
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

function validateProgress(progress: Progress): void {
  const { min, max } = FieldLimits.progressPercent;
  if (!Number.isInteger(progress.percent) || progress.percent < min || progress.percent > max) {
    throw new ValidationError('Invalid progress.', [{ path: 'percent', message: 'must be an integer 0–100' }]);
  }
  if (progress.stage !== undefined && (progress.stage.length === 0 || progress.stage.length > FieldLimits.progressStage)) {
    throw new ValidationError('Invalid progress.', [{ path: 'stage', message: 'must be 1–64 characters' }]);
  }
}

