import { randomBytes } from 'node:crypto';
import { lockFreeSlots, poolComplete, reserveSlot, routePoolKey, runningPoolKey, takeSlot } from '../../capacity/capacity.js';
import type { TxContext } from '../../db/database.js';
import { MetricName } from '../../observability/metrics.js';
import { findPlansOf } from '../../owners/owner-settings.repository.js';
import { DEFAULT_OWNER_SETTINGS } from '../../owners/owner-settings.js';
import { claimLocked } from '../lifecycle/transitions.js';
import { taskPolicy } from '../operation-policy.js';
import { selectClaimCandidates, type OperationRow } from '../store/operation.repository.js';
import type { ClaimDeps, ClaimedOperation } from './claim-operation.js';
import { markServed, retireTurn, selectReadyTurns, type OwnerTurn, type TurnCursor } from './owner-turns.repository.js';

/**
 * One claim transaction in the fair order (docs/design.md §4 "Fair share"); `claimNextOperation` documents the order,
 * the statements and their bounds, and is the only caller.
 */

/** A task type and the lane it may be claimed in: `local` (queued / retry states) or `external` (fallback state). */
export interface Lane {
  readonly type: string;
  readonly lane: 'local' | 'external';
}

/** Ready turns one page of the claim reads. */
const TURN_PAGE_SIZE = 32;

/** Pages of ready turns one claim considers at most (so {@link TURN_PAGE_SIZE} × this many owners). */
const MAX_TURN_PAGES = 8;

/**
 * The claimer's task types grouped by their registered priority, highest first: a tier's turns are served before the
 * next tier's are read (priority is a task type's, docs/design.md §3), owners take turns within a tier.
 */
function priorityTiers(deps: ClaimDeps, lanes: readonly Lane[]): string[][] {
  const byPriority = new Map<number, string[]>();
  for (const type of new Set(lanes.map((lane) => lane.type))) {
    const priority = deps.registry.get(type).priority ?? 0;
    byPriority.set(priority, [...(byPriority.get(priority) ?? []), type]);
  }
  return [...byPriority.entries()].sort((a, b) => b[0] - a[0]).map(([, types]) => types);
}

/** The route slot a lane's runs take, or undefined when its route is unlimited (or it has none). */
export function routeSlotOf(deps: ClaimDeps, lane: Lane): { key: string; limit: number } | undefined {
  const route = lane.lane === 'local' ? deps.registry.get(lane.type).capacityRoute : undefined;
  const limit = route === undefined ? undefined : deps.capacity.routeLimit(route);
  return route === undefined || limit === undefined ? undefined : { key: routePoolKey(route), limit };
}

/** A pool, by key and limit. */
interface Pool {
  readonly key: string;
  readonly limit: number;
}

/** One claim transaction in the fair order (see {@link claimNextOperation}). */
export class FairClaim {
  private readonly claims: ClaimedOperation[] = [];
  /** Ids taken so far: they stay claimable-looking until {@link finish}, and a read returns its own locked rows. */
  private readonly taken = new Set<string>();
  private readonly served = new Map<string, OwnerTurn>();
  private readonly retired: OwnerTurn[] = [];
  private readonly incomplete: Pool[] = [];
  private readonly atLimit = new Map<string, number>();

  constructor(
    private readonly tx: TxContext,
    private readonly skipLocked: boolean,
    private readonly deps: ClaimDeps,
    private eligible: readonly Lane[],
  ) {}

  async run(max: number): Promise<{ claims: ClaimedOperation[]; incompletePools: Pool[] }> {
    for (const tier of priorityTiers(this.deps, this.eligible)) {
      if (this.claims.length >= max) break;
      await this.serveTier(tier, max);
    }
    await this.finish();
    return { claims: this.claims, incompletePools: this.incomplete };
  }

  /** Serves the ready turns of one priority tier's task types, page by page, until `max` claims are made. */
  private async serveTier(types: readonly string[], max: number): Promise<void> {
    let after: TurnCursor | undefined;
    for (let page = 0; page < MAX_TURN_PAGES && this.claims.length < max; page++) {
      const eligibleTypes = types.filter((type) => this.eligible.some((lane) => lane.type === type));
      const turns = await selectReadyTurns(this.tx, eligibleTypes, TURN_PAGE_SIZE, after);
      if (turns.length === 0) return;
      const last = turns[turns.length - 1] as OwnerTurn;
      after = { servedAt: last.servedAt, taskType: last.taskType, ownerUserId: last.ownerUserId };
      // The owners' plans, only when a plan has a running limit of its own.
      const plans = this.deps.capacity.runningLimitsByPlan ? await findPlansOf(this.tx, [...new Set(turns.map((turn) => turn.ownerUserId))]) : new Map<string, string>();
      let pending = turns;
      while (pending.length > 0 && this.claims.length < max) {
        const share = Math.ceil((max - this.claims.length) / pending.length);
        const again: OwnerTurn[] = [];
        for (const turn of pending) {
          const want = Math.min(share, max - this.claims.length);
          if (want <= 0) break;
          if ((await this.serve(turn, plans.get(turn.ownerUserId) ?? DEFAULT_OWNER_SETTINGS.plan, want)) === want) again.push(turn);
        }
        pending = again;
      }
      if (turns.length < TURN_PAGE_SIZE) return;
    }
  }

  /** Takes up to `want` of the turn's due operations, within its owner's running limit. Returns how many it took. */
  private async serve(turn: OwnerTurn, plan: string, want: number): Promise<number> {
    const lanes = this.eligible.filter((lane) => lane.type === turn.taskType);
    if (lanes.length === 0) return 0;
    const running: Pool = { key: runningPoolKey(turn.taskType, turn.ownerUserId), limit: this.deps.capacity.runningLimit(turn.taskType, plan) };
    const slots = await lockFreeSlots(this.tx, this.skipLocked, running, want);
    if (slots.length === 0) {
      if (!(await poolComplete(this.tx, running.key, running.limit))) this.incomplete.push(running);
      else this.atLimit.set(turn.taskType, (this.atLimit.get(turn.taskType) ?? 0) + 1);
      return 0;
    }
    const rows = await this.candidates(turn, lanes, slots.length);
    if (rows.length === 0) {
      this.retired.push(turn);
      return 0;
    }
    const mine: OperationRow[] = [];
    for (const row of rows) {
      const lane: Lane = { type: row.task_type, lane: row.status === 'waiting_for_external_fallback' ? 'external' : 'local' };
      // A row of a route set aside earlier in this claim waits, as it would for the next claimer.
      if (!this.eligible.some((other) => other.type === lane.type && other.lane === lane.lane)) continue;
      const route = routeSlotOf(this.deps, lane);
      if (route && !(await reserveSlot(this.tx, this.skipLocked, route.key, route.limit, row.id))) {
        this.eligible = this.eligible.filter((other) => routeSlotOf(this.deps, other)?.key !== route.key);
        continue;
      }
      await takeSlot(this.tx, running.key, slots[mine.length] as number, row.id);
      this.taken.add(row.id);
      mine.push(row);
    }
    for (const row of mine) this.claims.push(claimOf(this.deps, row));
    if (mine.length > 0) this.served.set(`${turn.taskType}\u0000${turn.ownerUserId}`, turn);
    return mine.length;
  }

  /**
   * The owner's best `limit` due rows over its lanes not taken yet, in {@link claimOrder}: one read per lane (past the
   * rows this claim already took of that owner — its own locks do not hide them, and they move to `running` only in
   * {@link finish}).
   */
  private async candidates(turn: OwnerTurn, lanes: readonly Lane[], limit: number): Promise<OperationRow[]> {
    const alreadyTaken = this.claims.filter((claim) => claim.taskType === turn.taskType && claim.ownerUserId === turn.ownerUserId).length;
    let best: OperationRow[] = [];
    for (const lane of lanes) {
      const group = { lane: lane.lane === 'local' ? ('L' as const) : ('X' as const), taskType: turn.taskType, ownerUserId: turn.ownerUserId };
      const rows = (await selectClaimCandidates(this.tx, group, this.skipLocked, limit + alreadyTaken)).filter((row) => !this.taken.has(row.id));
      if (rows.length > 0) best = [...best, ...rows].sort(claimOrder).slice(0, limit);
    }
    return best;
  }

  /** The claim's writes besides the slots: the rows to `running`, the turns served, the turns with nothing due. */
  private async finish(): Promise<void> {
    await claimLocked(
      this.tx,
      this.claims.map((claim) => ({ id: claim.operationId, fromStatus: claim.claimedFrom, leaseToken: claim.leaseToken, leaseMs: claim.leaseMs })),
    );
    // Key order, so two claimers (and a mover marking turns ready) lock turn rows in the same order.
    const byKey = (a: OwnerTurn, b: OwnerTurn) => (a.taskType < b.taskType ? -1 : a.taskType > b.taskType ? 1 : a.ownerUserId < b.ownerUserId ? -1 : a.ownerUserId > b.ownerUserId ? 1 : 0);
    for (const turn of [...this.retired].sort(byKey)) await retireTurn(this.tx, turn);
    await markServed(this.tx, [...this.served.values()].sort(byKey));
    for (const [taskType, count] of this.atLimit) this.deps.metrics?.count(MetricName.ClaimSkippedOwnerAtLimit, count, { taskType });
  }
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

/**
 * Claim order within one owner: priority descending, then oldest `available_at`; exact ties go to lane `L` before
 * `X`, then to the smaller id (the order an InnoDB secondary index gives equal keys).
 */
function claimOrder(a: OperationRow, b: OperationRow): number {
  const availableA = a.available_at ?? '';
  const availableB = b.available_at ?? '';
  const laneA = a.status === 'waiting_for_external_fallback' ? 1 : 0;
  const laneB = b.status === 'waiting_for_external_fallback' ? 1 : 0;
  return b.priority - a.priority || (availableA < availableB ? -1 : availableA > availableB ? 1 : 0) || laneA - laneB || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
