import { randomBytes } from 'node:crypto';
import { ensurePool, reserveSlot, routePoolKey } from '../capacity/capacity.js';
import type { CapacityPolicy } from '../capacity/capacity-policy.js';
import { inTransaction } from '../db/transaction.js';
import type { TaskRegistry } from '../tasks/task-registry.js';
import type { PrivacyMode } from '../owners/privacy-mode.js';
import { markClaimed, selectClaimCandidate, type ClaimGroup, type LeaseKey } from './operation.repository.js';
import type { OperationStatus } from './operation-status.js';
import type { TxContext } from '../db/database.js';
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
  /** The state it was claimed from: `waiting_for_external_fallback` means its run goes to the external model route. */
  readonly claimedFrom: OperationStatus;
  /** The owner's privacy mode snapshotted at admission (DESIGN §4); routing follows it, never the live setting. */
  readonly privacyMode: PrivacyMode;
  /** The opaque subject reference stored at admission. */
  readonly subject: { readonly type: string; readonly id: string };
}

/** What a claim needs besides the worker scope. */
export interface ClaimDeps {
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
  readonly capacity: CapacityPolicy;
}

/**
 * Which model routes the claimer can serve right now (their circuit breakers admit a call, DESIGN §5). Task types
 * without `model` ignore this.
 */
export interface ClaimableRoutes {
  /** Model tasks in `queued` / `waiting_for_retry` (they run on the local route). */
  readonly local: boolean;
  /** Model tasks in `waiting_for_external_fallback` (they run on the external route). */
  readonly external: boolean;
}

const EVERY_ROUTE: ClaimableRoutes = Object.freeze({ local: true, external: true });

/** A task type and the lane it may be claimed in: `local` (queued / retry states) or `external` (fallback state). */
interface Lane {
  readonly type: string;
  readonly lane: 'local' | 'external';
}

/**
 * Claims the best eligible operation among the registered task types (DESIGN §3): highest priority, then oldest;
 * `queued`, or waiting (`waiting_for_retry`, `waiting_for_external_fallback`) whose time has come; never one past its
 * deadline. One short transaction: an index-ordered `SELECT … FOR UPDATE SKIP LOCKED` per claim lane
 * (`operations_claim_lane_idx`), then a guarded `UPDATE` by primary key (MariaDB), so concurrent claimers never take
 * the same row and never wait on each other. The new lease token has 256 bits from `crypto.randomBytes`.
 *
 * Model tasks (DESIGN §5) are claimed only on routes in `routes`: while a route's breaker is open, its operations are
 * left waiting — their attempts not spent — and the sweeper's wake-up re-sends bring them back later.
 *
 * Execution limits (DESIGN §4): when the best candidate's task type runs on a limited route (`capacityRoute`; model
 * tasks: their local runs only), a route slot is reserved in the same transaction; when the route is full, that
 * route's lanes are set aside and the next best candidate is tried. A candidate left behind stays as it was.
 * @returns the claim, or `null` when nothing is eligible (or every eligible route is full).
 * @throws {ScopeViolationError} when called with anything but a {@link WorkerScope}.
 */
export async function claimNextOperation(scope: WorkerScope, deps: ClaimDeps, routes: ClaimableRoutes = EVERY_ROUTE): Promise<ClaimedOperation | null> {
  assertWorkerScope(scope);
  const lanes: Lane[] = [];
  for (const type of deps.registry.types()) {
    const modelTask = deps.registry.get(type).model !== undefined;
    if (!modelTask || routes.local) lanes.push({ type, lane: 'local' });
    if (modelTask && routes.external) lanes.push({ type, lane: 'external' });
  }
  if (lanes.length === 0) return null;
  const store = scope.store;
  const slotOf = (lane: Lane) => {
    const route = lane.lane === 'local' ? deps.registry.get(lane.type).capacityRoute : undefined;
    const limit = route === undefined ? undefined : deps.capacity.routeLimit(route);
    return route === undefined || limit === undefined ? undefined : { key: routePoolKey(route), limit };
  };
  for (const lane of lanes) {
    const slot = slotOf(lane);
    if (slot) await ensurePool(store, slot.key, slot.limit);
  }
  return inTransaction(store, async (tx) => {
    let eligible = lanes;
    for (;;) {
      const row = await bestCandidate(tx, claimGroups(eligible), store.caps.skipLocked);
      if (!row) return null;
      const lane: Lane = { type: row.task_type, lane: row.status === 'waiting_for_external_fallback' ? 'external' : 'local' };
      const slot = slotOf(lane);
      if (slot && !(await reserveSlot(tx, store.caps.skipLocked, slot.key, slot.limit, row.id))) {
        eligible = eligible.filter((other) => slotOf(other)?.key !== slot.key);
        if (eligible.length === 0) return null;
        continue;
      }
      const policy = taskPolicy(deps.registry.get(row.task_type), deps.policy);
      const leaseToken = randomBytes(32).toString('hex');
      if ((await markClaimed(tx, row.id, row.status, leaseToken, policy.leaseMs)) !== 1) {
        throw new Error(`Claim of locked operation ${row.id} changed no row`);
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
        claimedFrom: row.status,
        privacyMode: row.privacy_mode,
        subject: { type: row.subject_type, id: row.subject_id },
      };
    }
  });
}

/** The lanes as SQL groups: the local lane's types in claim lane `L`, the external lane's in `X`. */
function claimGroups(lanes: readonly Lane[]): ClaimGroup[] {
  const local = lanes.filter((l) => l.lane === 'local').map((l) => l.type);
  const external = lanes.filter((l) => l.lane === 'external').map((l) => l.type);
  return [...(local.length > 0 ? [{ lane: 'L' as const, taskTypes: local }] : []), ...(external.length > 0 ? [{ lane: 'X' as const, taskTypes: external }] : [])];
}

/**
 * The best candidate over the groups: one index-ordered read per lane (usually one: the external lane exists only for
 * model tasks whose external route is available). A candidate of the other lane that loses stays locked until the
 * transaction ends, which only makes a concurrent claimer skip it for that long.
 */
async function bestCandidate(tx: TxContext, groups: readonly ClaimGroup[], skipLocked: boolean) {
  let best: Awaited<ReturnType<typeof selectClaimCandidate>>;
  for (const group of groups) {
    const candidate = await selectClaimCandidate(tx, group, skipLocked);
    if (candidate && (!best || candidate.priority > best.priority || (candidate.priority === best.priority && (candidate.available_at ?? '') < (best.available_at ?? '')))) {
      best = candidate;
    }
  }
  return best;
}

/**
 * Re-enters the owner scope a claim names (DESIGN §3): everything after the claim — heartbeat, progress,
 * complete, fail, acknowledge-cancel — runs in it.
 */
export function enterOwnerScope(scope: WorkerScope, claim: ClaimedOperation): OwnerScope {
  assertWorkerScope(scope);
  return new OwnerScope(scope.store, claim.ownerUserId);
}
