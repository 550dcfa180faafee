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
 * 1. per task type and claim lane it may run in (`L`: queued/retry, `X`: external fallback), one after another —
 *    `SELECT * FROM operations WHERE claim_lane = ? AND task_type = ? AND available_at <= now AND deadline_at > now
 *    [AND (priority > p OR (priority = p AND available_at <= a))] ORDER BY priority DESC, available_at LIMIT n
 *    FOR UPDATE SKIP LOCKED`, one range of `operations_claim_type_idx` (lane, task type, priority desc, available_at)
 *    in claim order (`selectClaimCandidates`), merged in code into the best n (`bestCandidates`); once n candidates are
 *    in hand, each next read is bounded by the n-th best so far (the bracketed term) and returns only rows that can
 *    still make the cut. Concurrent claimers take different rows and never wait, and what is queued for task types
 *    this claimer does not run is never read;
 * 2. per candidate on a limited route, the route slot: a locked free-slot read and its UPDATE (`reserveSlot`) — before
 *    the transaction, a primary-key read checks that the route's pool rows exist (`ensurePool`, which creates them
 *    once);
 * 3. one `UPDATE operations SET status = 'running', attempt = attempt + 1, lease_token = CASE id …, lease_expires_at =
 *    CASE id … WHERE (id = ? AND status = ?) OR …` for all the rows taken (`claimLocked` → `markClaimed`).
 *
 * Claims made in the same event-loop turn (the records of one SQS batch) or while another claim of this process (same
 * store, deps and routes) is in its transaction share one transaction (a {@link GroupCommit}): one `SELECT … LIMIT n`
 * per (lane, task type) for n claimers, each claimer getting its own row, lease and token — the best n rows in order,
 * as n claims one after another would take them. A lone claim waits only that turn, or for a group in progress when two are
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

/** The lanes as SQL groups: one (claim lane, task type) each — the local lane's types in claim lane `L`, the external lane's in `X`. */
function groupsOf(lanes: readonly Lane[]): ClaimGroup[] {
  return [
    ...lanes.filter((l) => l.lane === 'local').map((l) => ({ lane: 'L' as const, taskType: l.type })),
    ...lanes.filter((l) => l.lane === 'external').map((l) => ({ lane: 'X' as const, taskType: l.type })),
  ];
}

/**
 * Claim order: priority descending, then oldest `available_at`; exact ties go to lane `L` before `X`, then to the
 * smaller id — on MariaDB the order the earlier single read per lane gave them (an InnoDB secondary index orders equal
 * keys by primary key), now for ties across task types too.
 */
function claimOrder(a: OperationRow, b: OperationRow): number {
  const availableA = a.available_at ?? '';
  const availableB = b.available_at ?? '';
  const laneA = a.status === 'waiting_for_external_fallback' ? 1 : 0;
  const laneB = b.status === 'waiting_for_external_fallback' ? 1 : 0;
  return b.priority - a.priority || (availableA < availableB ? -1 : availableA > availableB ? 1 : 0) || laneA - laneB || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * The best `limit` candidates over the groups, in {@link claimOrder}: one index-ordered read per (lane, task type),
 * `LIMIT limit` each, one after another. Once `limit` candidates are in hand, every next read is bounded by the
 * `limit`-th best so far (`selectClaimCandidates`' `atLeast`), so it returns only rows that can still make the cut;
 * the result is exactly the best `limit` rows of the union of unbounded reads.
 *
 * Locking bound: a candidate that loses the merge stays locked (`FOR UPDATE`) until the claim's transaction ends —
 * one short transaction — and a concurrent claimer skips it meanwhile (`SKIP LOCKED`) and takes the next best. At most
 * `limit` × (groups − 1) such rows (each later read finding `limit` rows better than everything before it); none when
 * one group has candidates, the usual case of a single queued task type. Each read also locks the entries it passes
 * over in its own range (see `selectClaimCandidates`), never an entry of another task type.
 */
async function bestCandidates(tx: TxContext, groups: readonly ClaimGroup[], skipLocked: boolean, limit: number): Promise<OperationRow[]> {
  let best: OperationRow[] = [];
  for (const group of groups) {
    const worst = best.length >= limit ? best[best.length - 1] : undefined;
    const atLeast = worst && worst.available_at !== null ? { priority: worst.priority, availableAt: worst.available_at } : undefined;
    const rows = await selectClaimCandidates(tx, group, skipLocked, limit, atLeast);
    if (rows.length > 0) best = [...best, ...rows].sort(claimOrder).slice(0, limit);
  }
  return best;
}

/**
 * Re-enters the owner scope a claim names (docs/design.md §3): everything after the claim — heartbeat, progress,
 * complete, fail, acknowledge-cancel — runs in it.
 */
export function enterOwnerScope(scope: WorkerScope, claim: ClaimedOperation): OwnerScope {
  assertWorkerScope(scope);
  return new OwnerScope(scope.store, claim.ownerUserId);
}
