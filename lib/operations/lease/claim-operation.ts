import { ensurePool } from '../../capacity/capacity.js';
import { ensureOwnerCapacityRows, type OwnerPair } from '../../capacity/owner-capacity.repository.js';
import type { CapacityPolicy } from '../../capacity/capacity-policy.js';
import { GroupCommit } from '../../db/group-commit.js';
import type { Store } from '../../db/store.js';
import { inTransaction } from '../../db/transaction.js';
import { viaRoutine } from '../../db/server-routine.js';
import type { TaskRegistry } from '../../tasks/task-registry.js';
import type { OwnerSettings } from '../../owners/owner-settings.js';
import type { PrivacyMode } from '../../owners/privacy-mode.js';
import type { LeaseKey } from '../store/operation.repository.js';
import { MetricName, type OpsMetrics } from '../../observability/metrics.js';
import { callClaimOperations } from './claim-procedure.repository.js';
import { FairClaim, racedPairOf, routeSlotOf, type Lane } from './fair-claim.js';
import type { OperationStatus } from '../lifecycle/operation-status.js';
import type { OperationPolicy } from '../operation-policy.js';
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
  /**
   * What a read right after the claim's commit saw, when the claim made one (MariaDB's `claim_operations_v2` answers it
   * in the same round trip; in-process claims leave it out): whether the lease still held, whether the owner has asked to
   * cancel, and the owner's live settings. The worker, which runs a claim the moment it commits, makes its pre-run
   * rechecks (docs/design.md §2, §4, §5) from it instead of reading again; without it, or for a claim run later
   * (`runClaimedOperation`), they read.
   */
  readonly afterClaim?: {
    readonly leaseHeld: boolean;
    readonly cancelRequested: boolean;
    readonly ownerSettings: OwnerSettings;
  };
}

/** What a claim needs besides the worker scope. */
export interface ClaimDeps {
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
  readonly capacity: CapacityPolicy;
  /** Counts `ClaimSkippedOwnerAtLimit` (per task type) when given. @default none */
  readonly metrics?: OpsMetrics;
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

/**
 * Claims an eligible operation among the registered task types in the fair claim order (docs/design.md §3, §4): task
 * types of a higher priority first; within a priority, owners take turns — the (task type, owner) pair served least
 * recently goes first — and within one owner's queue the highest priority, then the oldest, goes first; `queued`, or waiting (`waiting_for_retry`, `waiting_for_external_fallback`)
 * whose time has come; never one past its deadline; never one whose owner already has its running limit of that task
 * type running (`CapacityPolicy.runningLimit`: the owner is passed over, its operations stay as they are, attempts
 * unspent, and the claim serves the next owner). The new lease token has 256 bits from `crypto.randomBytes`. In one
 * short transaction — on MariaDB one `CALL claim_operations_v2` that runs these steps server-side (docs/design.md §9);
 * SQLite sends them one by one without the locking clauses:
 *
 * 1. the ready turns, a page at a time: `owner_turns` rows of the claimer's task types with `ready_at <= now`, in
 *    `served_at` order (`selectReadyTurns`: a plain read of one range of `owner_turns_type_turn_idx` per task type, merged),
 *    and those owners' plans (one read of `owner_settings`, only when a plan has a running limit of its own:
 *    `runningLimitsByPlan`);
 * 2. per turn, in order: its owner's running count as committed (`owner_capacity.running`, a plain read:
 *    `readRunning`), less what this claim already took of it — none free: the owner is at its limit, counted as
 *    `ClaimSkippedOwnerAtLimit`, and passed over — then that owner's best due rows of the lanes the claimer serves, as
 *    many as it has free (`selectClaimCandidates`: one range of `operations_owner_claim_idx` per lane, `FOR UPDATE
 *    SKIP LOCKED`), each, on a limited route (`capacityRoute`; model tasks: their local runs only), given a route slot
 *    (`reserveSlot`; a full route sets its lanes aside for the rest of the claim);
 * 3. at the end, per owner taken from, in key order, one guarded `UPDATE owner_capacity SET running = running + k …
 *    AND running <= limit − k` (`addRunningWithin`: it waits for a row another transaction holds; when another claim
 *    took the room meanwhile, all rolls back and the claim runs again), one `UPDATE operations SET status = 'running',
 *    … WHERE (id = ? AND status = ?) OR …` for every row taken (`claimLocked`), `served_at = now` for the turns served (`markServed`), and for each turn that had nothing
 *    due, its `ready_at` moved to its next due time or the turn deleted (`retireTurn`); a turn passed over at its limit
 *    also gets `served_at = now`. A wake-up spent on an owner at its limit is made good by that owner's runs: each that
 *    ends while the owner has due work sends a `capacity_freed` hint (the worker, `hasDueOperation`).
 *
 * A group of n claims shares the turns fairly: each ready owner gets up to ⌈n / owners⌉ in a first pass, owners that
 * took their whole share get the remainder in the next (work-conserving: a lone owner gets all n, up to its limit).
 * The claim reads the turns it considers, each one's running counter, and the rows it takes — O(n) reads and locks plus
 * one turn and one counter read per owner at its limit it passes over; never an owner's backlog (`npm run bench --
 * --fairness`, `test/operations/fair-claim-bounds.test.ts`). Owners passed over at their limit go to the back of the
 * line (`served_at = now`), so the next claims reach the others first; a claim reads on, page by page, until it has its
 * claims, no turn is left, or it has read `MAX_TURNS_PER_CLAIM` (256) turns (`fair-claim.ts`, which holds the
 * transaction).
 *
 * Claims made in the same event-loop turn or while another claim of this process (same store, deps and routes) is in
 * its transaction share one transaction (a {@link GroupCommit}), each claimer getting its own row, lease and token.
 *
 * Model tasks (docs/design.md §5) are claimed only on routes in `routes`: while a route's breaker is open, its
 * operations are left waiting — their attempts not spent — and the sweeper's wake-up re-sends bring them back later.
 * @returns the claim, or `null` when nothing is eligible (or every eligible owner or route is at its limit).
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
 * Claims up to `max` operations (see {@link claimNextOperation}). A turn whose owner has no `owner_capacity` row (its
 * operations predate it: admitted by an earlier release) is passed over inside the transaction; the row is then
 * created outside it, counted from the operations, and the claim runs once more for what is still missing.
 */
async function claimUpTo(store: Store, deps: ClaimDeps, routes: ClaimableRoutes, max: number): Promise<ClaimedOperation[]> {
  const lanes: Lane[] = [];
  for (const type of deps.registry.types()) {
    const modelTask = deps.registry.get(type).model !== undefined;
    if (!modelTask || routes.local) lanes.push({ type, lane: 'local' });
    if (modelTask && routes.external) lanes.push({ type, lane: 'external' });
  }
  if (lanes.length === 0) return [];
  for (const lane of lanes) {
    const slot = routeSlotOf(deps, lane);
    if (slot) await ensurePool(store, slot.key, slot.limit);
  }
  const first = await claimOnce(store, deps, lanes, max);
  if (first.incompletePairs.length === 0 || first.claims.length >= max) return first.claims;
  await ensureOwnerCapacityRows(store, first.incompletePairs);
  const second = await claimOnce(store, deps, lanes, max - first.claims.length);
  return [...first.claims, ...second.claims];
}

/**
 * One claim transaction: on MariaDB one `CALL claim_operations_v2` (`caps.serverRoutines`; docs/design.md §9) — the
 * same decision as `FairClaim`, made server-side in one round trip (`viaRoutine`: a deadlock is retried, a routine
 * not there yet falls back) — else `FairClaim` statement by statement. A claim whose running-limit guard failed at its
 * end (another claim took the room) rolled back and runs again with that owner passed over, up to
 * {@link MAX_CLAIM_RACES} raced owners.
 */
async function claimOnce(store: Store, deps: ClaimDeps, lanes: readonly Lane[], max: number): Promise<{ claims: ClaimedOperation[]; incompletePairs: readonly OwnerPair[] }> {
  const raced: OwnerPair[] = [];
  for (;;) {
    try {
      return await viaRoutine<{ claims: ClaimedOperation[]; incompletePairs: readonly OwnerPair[] }>(
        store,
        async () => {
          const result = await callClaimOperations(store, deps, lanes, max, raced);
          for (const taskType of result.passedOver) deps.metrics?.count(MetricName.ClaimSkippedOwnerAtLimit, 1, { taskType });
          return result;
        },
        () => inTransaction(store, (tx) => new FairClaim(tx, store.caps.skipLocked, deps, lanes, raced).run(max)),
      );
    } catch (error) {
      // Another claim took an owner's room between this claim's read and its end: everything rolled back. Run again
      // with that owner passed over, so the claim serves the owners behind it instead of racing for the same one.
      const pair = racedPairOf(error);
      if (!pair) throw error;
      raced.push(pair);
      if (raced.length >= MAX_CLAIM_RACES) return { claims: [], incompletePairs: [] };
    }
  }
}

/**
 * Raced owners after which one claim gives up for this wake-up (each try passes every owner raced so far over; then
 * nothing is claimed: the work stays queued for the next claim, the winners' runs end with `capacity_freed` hints, the
 * sweeper re-sends at worst). Every race is lost to a claim that took the room, so a claim loses at most one race per
 * claimer running beside it: 20 claimers started together over 20 owners with a running limit of 1 lost at most 10
 * (`test/capacity/running-counter-races.test.ts`, in-process on MariaDB, where the window between read and guard is
 * widest).
 */
const MAX_CLAIM_RACES = 32;

/**
 * Re-enters the owner scope a claim names (docs/design.md §3): everything after the claim — heartbeat, progress,
 * complete, fail, acknowledge-cancel — runs in it.
 */
export function enterOwnerScope(scope: WorkerScope, claim: ClaimedOperation): OwnerScope {
  assertWorkerScope(scope);
  return new OwnerScope(scope.store, claim.ownerUserId);
}
