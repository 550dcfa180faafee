import { randomBytes } from 'node:crypto';
import { ensurePool, reserveSlot, routePoolKey } from '../../capacity/capacity.js';
import type { CapacityPolicy } from '../../capacity/capacity-policy.js';
import { GroupCommit } from '../../db/group-commit.js';
import type { Store } from '../../db/store.js';
import { inTransaction } from '../../db/transaction.js';
import type { TaskRegistry } from '../../tasks/task-registry.js';
import type { PrivacyMode } from '../../owners/privacy-mode.js';
import { selectClaimCandidates, type ClaimGroup, type LeaseKey, type OperationRow } from '../store/operation.repository.js';
import { claimLocked } from '../lifecycle/transitions.js';
import type { OperationStatus } from '../lifecycle/operation-status.js';
import type { TxContext } from '../../db/database.js';
import { taskPolicy, type OperationPolicy } from '../operation-policy.js';
import { assertWorkerScope, OwnerScope, type WorkerScope } from '../scopes.js';

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
  /** The owner's privacy mode snapshotted at admission (docs/design.md §4); routing follows it, never the live setting. */
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
 * Which model routes the claimer can serve right now (their circuit breakers admit a call, docs/design.md §5). Task types
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
 * Claims the best eligible operation among the registered task types (docs/design.md §3): highest priority, then
 * oldest; `queued`, or waiting (`waiting_for_retry`, `waiting_for_external_fallback`) whose time has come; never one
 * past its deadline. The new lease token has 256 bits from `crypto.randomBytes`. The SQL, in one short transaction
 * (MariaDB; SQLite sends the same without the locking clauses):
 *
 * 1. per claim lane in use (`L`: queued/retry, `X`: external fallback) —
 *    `SELECT * FROM operations WHERE claim_lane = ? AND task_type IN (…) AND available_at <= now AND deadline_at > now
 *    ORDER BY priority DESC, available_at LIMIT n FOR UPDATE SKIP LOCKED`, read in the order of
 *    `operations_claim_lane_idx` (`selectClaimCandidates`), so concurrent claimers take different rows and never wait;
 * 2. per candidate on a limited route, the route slot: a locked free-slot read and its UPDATE (`reserveSlot`);
 * 3. one `UPDATE operations SET status = 'running', attempt = attempt + 1, lease_token = CASE id …, lease_expires_at =
 *    CASE id … WHERE (id = ? AND status = ?) OR …` for all the rows taken (`claimLocked` → `markClaimed`).
 *
 * Claims made in the same event-loop turn (the records of one SQS batch) or while another claim of this process (same
 * store, deps and routes) is in its transaction share one transaction (a {@link GroupCommit}): one `SELECT … LIMIT n`
 * per lane for n claimers, each claimer getting its own row, lease and token — the best n rows in order, as n claims
 * one after another would take them. A lone claim waits only that turn, or for a group in progress when two are
 * (under load, a claim costs a fraction of a transaction).
 *
 * Model tasks (docs/design.md §5) are claimed only on routes in `routes`: while a route's breaker is open, its operations are
 * left waiting — their attempts not spent — and the sweeper's wake-up re-sends bring them back later.
 *
 * Execution limits (docs/design.md §4): when a candidate's task type runs on a limited route (`capacityRoute`; model tasks:
 * their local runs only), a route slot is reserved in the same transaction; when the route is full, that route's lanes
 * are set aside and the next best candidates are tried. A candidate left behind stays as it was.
 * @returns the claim, or `null` when nothing is eligible (or every eligible route is full).
 * @throws {ScopeViolationError} when called with anything but a {@link WorkerScope}.
 */
export async function claimNextOperation(scope: WorkerScope, deps: ClaimDeps, routes: ClaimableRoutes = EVERY_ROUTE): Promise<ClaimedOperation | null> {
  assertWorkerScope(scope);
  return claimGroupOf(scope.store, deps, routes).submit(scope);
}

/**
 * Claim groups of one kind committing at once: a claimer arriving while one group commits starts the next at once,
 * so one slow transaction does not hold every claimer of the process back.
 */
const GROUPS_IN_FLIGHT = 2;

/** Per store, deps and routes (`local`/`external` flags): the group concurrent claims of this process share. */
const claimGroups = new WeakMap<Store, WeakMap<ClaimDeps, Map<string, GroupCommit<WorkerScope, ClaimedOperation | null>>>>();

function claimGroupOf(store: Store, deps: ClaimDeps, routes: ClaimableRoutes): GroupCommit<WorkerScope, ClaimedOperation | null> {
  let byDeps = claimGroups.get(store);
  if (!byDeps) claimGroups.set(store, (byDeps = new WeakMap()));
  let byRoutes = byDeps.get(deps);
  if (!byRoutes) byDeps.set(deps, (byRoutes = new Map()));
  const key = `${routes.local ? 'L' : '-'}${routes.external ? 'X' : '-'}`;
  let group = byRoutes.get(key);
  if (!group) {
    const claimFor = (scopes: readonly WorkerScope[]) => claimUpTo(store, deps, routes, scopes.length);
    group = new GroupCommit<WorkerScope, ClaimedOperation | null>(
      async (scopes) => {
        const claims = await claimFor(scopes);
        return scopes.map((_, i) => claims[i] ?? null);
      },
      async (scope) => (await claimFor([scope]))[0] ?? null,
      { maxConcurrent: GROUPS_IN_FLIGHT },
    );
    byRoutes.set(key, group);
  }
  return group;
}

/**
 * Claims up to `max` operations in one transaction (see {@link claimNextOperation}): the best `max` candidates of the
 * eligible lanes in order; a candidate whose route is full sets that route's lanes aside and the next best are read.
 */
async function claimUpTo(store: Store, deps: ClaimDeps, routes: ClaimableRoutes, max: number): Promise<ClaimedOperation[]> {
  const lanes: Lane[] = [];
  for (const type of deps.registry.types()) {
    const modelTask = deps.registry.get(type).model !== undefined;
    if (!modelTask || routes.local) lanes.push({ type, lane: 'local' });
    if (modelTask && routes.external) lanes.push({ type, lane: 'external' });
  }
  if (lanes.length === 0) return [];
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
    const claims: ClaimedOperation[] = [];
    let eligible = lanes;
    while (claims.length < max && eligible.length > 0) {
      const rows = await bestCandidates(tx, groupsOf(eligible), store.caps.skipLocked, max - claims.length);
      const taken: ClaimedOperation[] = [];
      let setAside = false;
      for (const row of rows) {
        const lane: Lane = { type: row.task_type, lane: row.status === 'waiting_for_external_fallback' ? 'external' : 'local' };
        // A row of a route set aside earlier in this pass waits, as it would for the next claimer.
        if (!eligible.some((other) => other.type === lane.type && other.lane === lane.lane)) continue;
        const slot = slotOf(lane);
        if (slot && !(await reserveSlot(tx, store.caps.skipLocked, slot.key, slot.limit, row.id))) {
          eligible = eligible.filter((other) => slotOf(other)?.key !== slot.key);
          setAside = true;
          continue;
        }
        taken.push(claimOf(deps, row));
      }
      await markAll(tx, taken);
      claims.push(...taken);
      // Read again only when a full route left room for candidates of the other lanes (the rows taken are `running`
      // now: no read returns them again).
      if (!setAside) break;
    }
    return claims;
  });
}

/** Moves the claims' locked rows to `running` in one statement (the `claim` move). */
function markAll(tx: TxContext, claims: readonly ClaimedOperation[]): Promise<void> {
  return claimLocked(tx, claims.map((claim) => ({ id: claim.operationId, fromStatus: claim.claimedFrom, leaseToken: claim.leaseToken, leaseMs: claim.leaseMs })));
}

/** The claim of one locked candidate: a new lease token, the lease length of its task type. */
function claimOf(deps: ClaimDeps, row: OperationRow): ClaimedOperation {
  const policy = taskPolicy(deps.registry.get(row.task_type), deps.policy);
  const leaseToken = randomBytes(32).toString('hex');
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

/** The lanes as SQL groups: the local lane's types in claim lane `L`, the external lane's in `X`. */
function groupsOf(lanes: readonly Lane[]): ClaimGroup[] {
  const local = lanes.filter((l) => l.lane === 'local').map((l) => l.type);
  const external = lanes.filter((l) => l.lane === 'external').map((l) => l.type);
  return [...(local.length > 0 ? [{ lane: 'L' as const, taskTypes: local }] : []), ...(external.length > 0 ? [{ lane: 'X' as const, taskTypes: external }] : [])];
}

/**
 * The best `limit` candidates over the groups, best first (priority descending, then `available_at`; ties keep the
 * lane order): one index-ordered read per lane (usually one: the external lane exists only for model tasks whose
 * external route is available). Candidates that lose stay locked until the transaction ends, which only makes a
 * concurrent claimer skip them for that long.
 */
async function bestCandidates(tx: TxContext, groups: readonly ClaimGroup[], skipLocked: boolean, limit: number): Promise<OperationRow[]> {
  const candidates: OperationRow[] = [];
  for (const group of groups) candidates.push(...(await selectClaimCandidates(tx, group, skipLocked, limit)));
  const better = (a: OperationRow, b: OperationRow) => b.priority - a.priority || ((a.available_at ?? '') < (b.available_at ?? '') ? -1 : (a.available_at ?? '') > (b.available_at ?? '') ? 1 : 0);
  return candidates.sort(better).slice(0, limit);
}

/**
 * Re-enters the owner scope a claim names (docs/design.md §3): everything after the claim — heartbeat, progress,
 * complete, fail, acknowledge-cancel — runs in it.
 */
export function enterOwnerScope(scope: WorkerScope, claim: ClaimedOperation): OwnerScope {
  assertWorkerScope(scope);
  return new OwnerScope(scope.store, claim.ownerUserId);
}
