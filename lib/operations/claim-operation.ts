import { randomBytes } from 'node:crypto';
import { ensurePool, reserveSlot, routePoolKey } from '../capacity/capacity.js';
import type { CapacityPolicy } from '../capacity/capacity-policy.js';
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
  readonly capacity: CapacityPolicy;
}

/**
 * Claims the best eligible operation among the registered task types (DESIGN §3): highest priority, then oldest;
 * `queued`, or `waiting_for_retry` whose retry time has come; never one past its deadline. One short transaction:
 * `SELECT … FOR UPDATE SKIP LOCKED` then a guarded `UPDATE` by primary key (MariaDB), so concurrent claimers never
 * take the same row and never wait on each other. The new lease token has 256 bits from `crypto.randomBytes`.
 *
 * Execution limits (DESIGN §4): when the best candidate's task type runs on a limited route (`capacityRoute`), a
 * route slot is reserved in the same transaction; when the route is full, that route's task types are set aside and
 * the next best candidate is tried. A candidate left behind stays as it was — waiting, its attempt not spent.
 * @returns the claim, or `null` when nothing is eligible (or every eligible route is full).
 * @throws {ScopeViolationError} when called with anything but a {@link WorkerScope}.
 */
export async function claimNextOperation(scope: WorkerScope, deps: ClaimDeps): Promise<ClaimedOperation | null> {
  assertWorkerScope(scope);
  const types = deps.registry.types();
  if (types.length === 0) return null;
  const store = scope.store;
  const routeOf = (type: string) => {
    const route = deps.registry.get(type).capacityRoute;
    const limit = route === undefined ? undefined : deps.capacity.routeLimit(route);
    return route === undefined || limit === undefined ? undefined : { key: routePoolKey(route), limit };
  };
  for (const type of types) {
    const route = routeOf(type);
    if (route) await ensurePool(store, route.key, route.limit);
  }
  return inTransaction(store, async (tx) => {
    let eligible = types;
    for (;;) {
      const candidate = await selectClaimCandidate(tx, eligible, store.caps.skipLocked);
      if (!candidate) return null;
      const row = await findClaimedOperation(tx, candidate.id);
      if (!row) return null;
      const route = routeOf(row.task_type);
      if (route && !(await reserveSlot(tx, store.caps.skipLocked, route.key, route.limit, row.id))) {
        eligible = eligible.filter((type) => routeOf(type)?.key !== route.key);
        if (eligible.length === 0) return null;
        continue;
      }
      const policy = taskPolicy(deps.registry.get(row.task_type), deps.policy);
      const leaseToken = randomBytes(32).toString('hex');
      if ((await markClaimed(tx, candidate.id, candidate.status, leaseToken, policy.leaseMs)) !== 1) {
        throw new Error(`Claim of locked operation ${candidate.id} changed no row`);
      }
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
    }
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
