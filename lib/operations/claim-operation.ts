import { randomBytes } from 'node:crypto';
import { inTransaction } from '../db/transaction.js';
import type { TaskRegistry } from '../tasks/task-registry.js';
import { findClaimedOperation, markClaimed, selectClaimCandidate, type LeaseKey } from './operation.repository.js';
import { taskPolicy, type OperationPolicy } from './operation-policy.js';
import { assertWorkerScope, OwnerScope, type WorkerScope } from './scopes.js';

/**
 * A claimed operation: what the worker needs to run it and to write under its lease. Holds the lease token:
 * keep it out of logs and responses.
 */
export interface ClaimedOperation extends LeaseKey {
  readonly taskType: string;
  /** 1-based attempt this claim started. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Validated params as stored (canonical JSON). */
  readonly paramsJson: string;
  /** Lease length in **milliseconds**; each heartbeat extends the lease this far past the database clock. */
  readonly leaseMs: number;
}

/** What a claim needs besides the worker scope. */
export interface ClaimDeps {
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
}

/**
 * Claims the best eligible operation among the registered task types (DESIGN §3): highest priority, then oldest;
 * `queued`, or `waiting_for_retry` whose retry time has come; never one past its deadline. One short transaction:
 * `SELECT … FOR UPDATE SKIP LOCKED` then a guarded `UPDATE` by primary key (MariaDB), so concurrent claimers never
 * take the same row and never wait on each other. The new lease token has 256 bits from `crypto.randomBytes`.
 * @returns the claim, or `null` when nothing is eligible.
 * @throws {ScopeViolationError} when called with anything but a {@link WorkerScope}.
 */
export async function claimNextOperation(scope: WorkerScope, deps: ClaimDeps): Promise<ClaimedOperation | null> {
  assertWorkerScope(scope);
  const types = deps.registry.types();
  if (types.length === 0) return null;
  const store = scope.store;
  return inTransaction(store, async (tx) => {
    const candidate = await selectClaimCandidate(tx, types, store.caps.skipLocked);
    if (!candidate) return null;
    const row = await findClaimedOperation(tx, candidate.id);
    if (!row) return null;
    const policy = taskPolicy(deps.registry.get(row.task_type), deps.policy);
    const leaseToken = randomBytes(32).toString('hex');
    if ((await markClaimed(tx, candidate.id, candidate.status, leaseToken, policy.leaseMs)) !== 1) return null;
    return {
      operationId: row.id,
      ownerUserId: row.owner_user_id,
      leaseToken,
      taskType: row.task_type,
      attempt: row.attempt + 1,
      maxAttempts: row.max_attempts,
      paramsJson: row.params_json,
      leaseMs: policy.leaseMs,
    };
  });
}

/**
 * Re-enters the owner scope a claim names (DESIGN §3): everything after the claim — heartbeat, progress,
 * complete, fail, acknowledge-cancel — runs in it.
 */
export function enterOwnerScope(scope: WorkerScope, claim: ClaimedOperation): OwnerScope {
  assertWorkerScope(scope);
  return new OwnerScope(scope.store, claim.ownerUserId);
}
