import { randomBytes } from 'node:crypto';
import { reserveSlot, routePoolKey } from '../../capacity/capacity.js';
import { addRunningWithin, readRunning, type OwnerPair } from '../../capacity/owner-capacity.repository.js';
import type { TxContext } from '../../db/database.js';
import { MetricName } from '../../observability/metrics.js';
import { findPlansOf } from '../../owners/owner-settings.repository.js';
import { DEFAULT_OWNER_SETTINGS } from '../../owners/owner-settings.js';
import { claimLocked } from '../lifecycle/transitions.js';
import { taskPolicy } from '../operation-policy.js';
import { selectClaimCandidates, type OperationRow } from '../store/operation.repository.js';
import type { ClaimDeps, ClaimedOperation } from './claim-operation.js';
import { markServed, retireTurn, selectReadyTurns, type OwnerTurn, type TurnCursor } from './owner-turns.repository.js';
import { byPairKey } from '../../db/key-order.js';

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

/**
 * Ready turns one claim reads at most (8 pages), whatever it has claimed by then: turns left with nothing due (an
 * owner's last operation ran; they are retired lazily) are each read, and after a burst of many owners a claim would
 * otherwise walk every one of them in one transaction (`npm run bench`: over 15 minutes in one claim at 100,000 such
 * turns). The turns it read and found empty are retired at its end, so the next claim reads further; an operation
 * behind the bound waits for a later claim (the sweeper's wake-up re-send at worst).
 */
export const MAX_TURNS_PER_CLAIM = 8 * TURN_PAGE_SIZE;

/**
 * The claimer's task types grouped by their registered priority, highest first: a tier's turns are served before the
 * next tier's are read (priority is a task type's, docs/design.md §3), owners take turns within a tier.
 */
export function priorityTiers(deps: ClaimDeps, lanes: readonly Lane[]): string[][] {
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

/**
 * Thrown at the end of a claim whose take would put an owner above its running limit: another claimer took the
 * owner's room after this claim read it (`addRunningWithin`'s guard). The transaction rolls back, nothing is
 * claimed, and `claimOnce` runs the claim again with that owner passed over (`raced`), so the claim goes on to the
 * owners behind it instead of racing for the same one again. MariaDB's `claim_operations_v2` signals the same, its
 * message {@link RUNNING_LIMIT_RACED} followed by `: <task type> / <owner>` (read back by {@link racedPairOf}).
 */
export class RunningLimitRaced extends Error {
  constructor(pair: OwnerPair) {
    super(`${RUNNING_LIMIT_RACED}: ${pair.taskType} / ${pair.ownerUserId}`);
    this.name = 'RunningLimitRaced';
  }
}

/** The message (prefix) of a claim whose running limit was raced, in-process and from `claim_operations_v2`. */
export const RUNNING_LIMIT_RACED = 'claim_operations_v2: a running limit was taken by another claim';

/**
 * The owner whose running limit `error` says was raced (from either implementation), or undefined for any other
 * error. A task type never holds a space, so the first ` / ` after it ends it.
 */
export function racedPairOf(error: unknown): OwnerPair | undefined {
  const prefix = `${RUNNING_LIMIT_RACED}: `;
  if (!(error instanceof Error) || !error.message.startsWith(prefix)) return undefined;
  const rest = error.message.slice(prefix.length);
  const cut = rest.indexOf(' / ');
  return cut < 0 ? undefined : { taskType: rest.slice(0, cut), ownerUserId: rest.slice(cut + 3) };
}

/** One claim transaction in the fair order (see {@link claimNextOperation}). */
export class FairClaim {
  private readonly claims: ClaimedOperation[] = [];
  /** Ids taken so far: they stay claimable-looking until {@link finish}, and a read returns its own locked rows. */
  private readonly taken = new Set<string>();
  private readonly served = new Map<string, OwnerTurn>();
  private readonly retired: OwnerTurn[] = [];
  /** Pairs whose owner has no `owner_capacity` row (operations admitted before it existed): created after the claim. */
  private readonly incomplete: OwnerPair[] = [];
  /** Per owner taken from: what this claim took and the limit, applied to the counter at the end (`finish`). */
  private readonly running = new Map<string, { pair: OwnerPair; taken: number; limit: number }>();
  /** Turns passed over at their running limit. */
  private readonly passedOver: OwnerTurn[] = [];
  /** Turns with nothing due in the lanes this claimer serves, which it cannot retire: sent to the back (`served_at`). */
  private readonly sentBack: OwnerTurn[] = [];
  /** Ready turns read so far (bounded by {@link MAX_TURNS_PER_CLAIM}). */
  private turnsRead = 0;

  constructor(
    private readonly tx: TxContext,
    private readonly skipLocked: boolean,
    private readonly deps: ClaimDeps,
    private eligible: readonly Lane[],
    /** Owners whose running limit an earlier try of this claim lost to another claim: passed over this time. */
    private readonly raced: readonly OwnerPair[] = [],
  ) {}

  /** Runs the claim for up to `max` operations; `incompletePairs` are the pairs passed over for lack of a counter row. */
  async run(max: number): Promise<{ claims: ClaimedOperation[]; incompletePairs: OwnerPair[] }> {
    for (const tier of priorityTiers(this.deps, this.eligible)) {
      if (this.claims.length >= max) break;
      await this.serveTier(tier, max);
    }
    await this.finish();
    return { claims: this.claims, incompletePairs: this.incomplete };
  }

  /**
   * Serves the ready turns of one priority tier's task types, page by page, until `max` claims are made: a page is one
   * read per task type (its own range of the turn index), merged in turn order.
   */
  private async serveTier(types: readonly string[], max: number): Promise<void> {
    const cursors = new Map<string, TurnCursor>();
    const exhausted = new Set<string>();
    while (this.claims.length < max && this.turnsRead < MAX_TURNS_PER_CLAIM) {
      const turns: OwnerTurn[] = [];
      for (const type of types) {
        if (exhausted.has(type) || !this.eligible.some((lane) => lane.type === type)) continue;
        const read = await selectReadyTurns(this.tx, type, TURN_PAGE_SIZE, cursors.get(type));
        if (read.length < TURN_PAGE_SIZE) exhausted.add(type);
        const last = read[read.length - 1];
        if (last) cursors.set(type, { servedAt: last.servedAt, ownerUserId: last.ownerUserId });
        turns.push(...read);
      }
      if (turns.length === 0) return;
      this.turnsRead += turns.length;
      turns.sort(turnOrder);
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
    }
  }

  /** Takes up to `want` of the turn's due operations, within its owner's running limit. Returns how many it took. */
  private async serve(turn: OwnerTurn, plan: string, want: number): Promise<number> {
    const lanes = this.eligible.filter((lane) => lane.type === turn.taskType);
    if (lanes.length === 0) return 0;
    // The owner's running count as committed, less what this claim has taken of it already; raised at the end.
    const pair: OwnerPair = { taskType: turn.taskType, ownerUserId: turn.ownerUserId };
    if (this.raced.some((other) => byPairKey(other, pair) === 0)) {
      this.passedOver.push(turn);
      return 0;
    }
    const running = await readRunning(this.tx, pair);
    if (running === 'missing') {
      this.incomplete.push(pair);
      return 0;
    }
    const limit = this.deps.capacity.runningLimit(turn.taskType, plan);
    const taken = this.running.get(keyOf(turn))?.taken ?? 0;
    const free = limit - running - taken;
    if (free <= 0) {
      this.passedOver.push(turn);
      return 0;
    }
    const rows = await this.candidates(turn, lanes, Math.min(want, free));
    if (rows.length === 0) {
      // Only a claimer that serves every lane of the task type knows the turn has nothing due, and retires it. One that
      // serves some lanes sends the turn to the back of the line instead (`served_at = now`), so turns it cannot retire
      // never pin the front of the line against the bound on turns read (MAX_TURNS_PER_CLAIM).
      if (lanes.length === this.lanesOf(turn.taskType)) this.retired.push(turn);
      else this.sentBack.push(turn);
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
      this.taken.add(row.id);
      mine.push(row);
    }
    if (mine.length > 0) this.running.set(keyOf(turn), { pair, taken: taken + mine.length, limit });
    for (const row of mine) this.claims.push(claimOf(this.deps, row));
    if (mine.length > 0) this.served.set(keyOf(turn), turn);
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

  /** How many claim lanes the task type has: two for a model task (local and external), else one. */
  private lanesOf(taskType: string): number {
    return this.deps.registry.get(taskType).model !== undefined ? 2 : 1;
  }

  /**
   * The claim's writes besides the route slots: the running counters of the owners it took work from, in key order,
   * each guarded by the owner's limit ({@link RunningLimitRaced} when another claim took the room meanwhile: all rolls
   * back); the rows to `running`; then each turn row it touches, one statement each in key order (so concurrent
   * claimers lock rows in one order, counters before turns): a turn served or passed over at its limit gets
   * `served_at = now` (an owner at its limit holds its share: it goes to the back of the line, and the next claims reach
   * the owners below their limits first); a turn with nothing due is retired.
   * @throws {RunningLimitRaced} when a counter's guard fails.
   */
  private async finish(): Promise<void> {
    for (const { pair, taken, limit } of [...this.running.values()].sort((a, b) => byPairKey(a.pair, b.pair))) {
      if (!(await addRunningWithin(this.tx, pair, taken, limit))) throw new RunningLimitRaced(pair);
    }
    await claimLocked(
      this.tx,
      this.claims.map((claim) => ({ id: claim.operationId, fromStatus: claim.claimedFrom, leaseToken: claim.leaseToken, leaseMs: claim.leaseMs })),
    );
    const writes = new Map<string, { turn: OwnerTurn; write: 'served' | 'retired' }>();
    for (const turn of this.retired) writes.set(keyOf(turn), { turn, write: 'retired' });
    for (const turn of [...this.sentBack, ...this.passedOver]) writes.set(keyOf(turn), { turn, write: 'served' });
    for (const turn of this.served.values()) writes.set(keyOf(turn), { turn, write: 'served' });
    for (const { turn, write } of [...writes.values()].sort((a, b) => byPairKey(a.turn, b.turn))) {
      await (write === 'served' ? markServed(this.tx, turn) : retireTurn(this.tx, turn));
    }
    for (const turn of this.passedOver) this.deps.metrics?.count(MetricName.ClaimSkippedOwnerAtLimit, 1, { taskType: turn.taskType });
  }
}

/** The primary key of a turn, as one string. */
function keyOf(turn: OwnerTurn): string {
  return `${turn.taskType}\u0000${turn.ownerUserId}`;
}

/** Turn order: least recently served first, then task type, then owner. */
function turnOrder(a: OwnerTurn, b: OwnerTurn): number {
  return a.servedAt < b.servedAt ? -1 : a.servedAt > b.servedAt ? 1 : byPairKey(a, b);
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
