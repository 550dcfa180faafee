import { ACTIVE_STATUSES, ALL_STATUSES, TERMINAL_STATUSES, TRANSITIONS, type OperationStatus } from '../lib/operations/lifecycle/operation-status.js';
import type { ChaosHistory, OperationRecord, RunRecord, TransitionRecord } from './history.js';

/** The invariants the chaos harness checks (the table in README's Reliability section), by name. */
export const INVARIANTS = Object.freeze({
  admittedExists: 'every admitted operation exists with its owner and key',
  oneOperationPerKey: 'one idempotency key names one operation',
  validState: 'every operation is in a state of the transition table',
  terminalOrActive: 'every operation is terminal or legitimately active (not stuck)',
  transitionsAllowed: 'every recorded transition is in the transition table, in an unbroken chain',
  effectOnce: 'a succeeded operation has exactly one effect, any other none',
  oneExecutionPerClaim: 'no claim (cycle, attempt) ran the handler twice',
  noWriteAfterTakeover: 'no lease-token write succeeded after its lease was taken over',
  oneNotificationPerTerminal: 'exactly one notification per terminal transition, to the owner',
  capacityMatchesActive: "capacity reservations equal the active operations, in their owner's pool",
  chainsVerify: 'every recovery-ledger chain verifies',
} as const);
/** The name of one of the {@link INVARIANTS}. */
export type InvariantName = keyof typeof INVARIANTS;

/** One broken invariant. */
export interface Violation {
  readonly invariant: InvariantName;
  readonly operationId?: string;
  readonly detail: string;
}

/** What {@link checkHistory} found. */
export interface CheckResult {
  readonly violations: readonly Violation[];
  /** Operations by final status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Operations still active (queued, running, waiting) when the history was read. */
  readonly stillActive: number;
  readonly effects: number;
  readonly executions: number;
  /** Succeeded operations whose handler ran more than once (an earlier run lost its lease or failed): at-least-once execution, committed once. */
  readonly reExecutedSuccesses: number;
  readonly notifications: number;
  readonly transitions: number;
}

/** Options of {@link checkHistory}. */
export interface CheckOptions {
  /**
   * How long, in **ms**, an active operation may sit past its due time (a claimable one past `available_at`, a running
   * one past its lease) before it counts as stuck rather than legitimately active. @default 60000
   */
  readonly stuckAfterMs?: number;
}

const isTerminal = (status: string | null) => status !== null && (TERMINAL_STATUSES as readonly string[]).includes(status);
const isActive = (status: string) => (ACTIVE_STATUSES as readonly string[]).includes(status);

/** Whether some row of the transition table moves `from` to `to` (docs/design.md §2). */
export function transitionAllowed(from: string, to: string): boolean {
  return Object.values(TRANSITIONS).some((t) => t.to === to && (t.from as readonly string[]).includes(from));
}

/** The `c<cycle>a<attempt>` stamp the chaos task puts in its progress stages and failure messages, if `note` has one. */
export function stampOf(note: string | null): { cycle: number; attempt: number } | undefined {
  const match = note === null ? null : /\bc(\d+)a(\d+)\b/.exec(note);
  return match ? { cycle: Number(match[1]), attempt: Number(match[2]) } : undefined;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const runKey = (r: { cycle: number; attempt: number }) => `c${r.cycle}a${r.attempt}`;

/** The recorded writes of one operation: a chain from its insert to its row, each move in the table, each stamp its holder's. */
function checkTransitions(operation: OperationRecord, transitions: readonly TransitionRecord[], out: Violation[]): void {
  const v = (invariant: InvariantName, detail: string) => out.push({ invariant, operationId: operation.id, detail });
  const first = transitions[0];
  if (!first || first.from !== null) {
    v('transitionsAllowed', 'no recorded insert: the history of this operation is incomplete');
    return;
  }
  if (first.to !== 'queued') v('transitionsAllowed', `inserted as ${first.to}, not queued`);
  let previous = first;
  for (const t of transitions.slice(1)) {
    const at = `seq ${t.seq}`;
    if (t.from !== previous.to || t.fromAttempt !== previous.toAttempt || t.fromCycle !== previous.toCycle) {
      v('transitionsAllowed', `${at} starts from ${t.from}@${t.fromCycle}/${t.fromAttempt}, the previous write left ${previous.to}@${previous.toCycle}/${previous.toAttempt}`);
    }
    if (t.kind === 'progress') {
      const stamp = stampOf(t.note);
      if (t.to !== 'running') v('transitionsAllowed', `${at}: progress written while ${t.to}`);
      else if (stamp && (stamp.cycle !== t.fromCycle || stamp.attempt !== t.fromAttempt)) {
        v('noWriteAfterTakeover', `${at}: progress of c${stamp.cycle}a${stamp.attempt} written while c${t.fromCycle}a${t.fromAttempt} held the lease`);
      }
    } else if (t.from === t.to) {
      if (t.to === 'running' && t.leaseChanged) v('noWriteAfterTakeover', `${at}: lease token replaced while running (attempt ${t.fromAttempt} → ${t.toAttempt})`);
      else if (isTerminal(t.to)) v('transitionsAllowed', `${at}: terminal ${t.to} row changed`);
    } else if (t.from !== null && !transitionAllowed(t.from, t.to)) v('transitionsAllowed', `${at}: ${t.from} → ${t.to} is not in the transition table`);
    else if (t.from === 'running') {
      const stamp = stampOf(t.note);
      if (stamp && (stamp.cycle !== t.fromCycle || stamp.attempt !== t.fromAttempt)) {
        v('noWriteAfterTakeover', `${at}: ${t.to} written by c${stamp.cycle}a${stamp.attempt} while c${t.fromCycle}a${t.fromAttempt} held the lease`);
      }
    }
    previous = t;
  }
  if (previous.to !== operation.status || previous.toAttempt !== operation.attempt || previous.toCycle !== operation.cycle) {
    v('transitionsAllowed', `the last recorded write left ${previous.to}@${previous.toCycle}/${previous.toAttempt}, the row is ${operation.status}@${operation.cycle}/${operation.attempt}`);
  }
}

function checkNotifications(
  operation: OperationRecord,
  transitions: readonly TransitionRecord[],
  notifications: ReadonlyArray<{ ownerUserId: string; cycle: number; status: string }>,
  out: Violation[],
): void {
  const terminals = transitions.filter((t) => t.kind === 'status' && isTerminal(t.to) && !isTerminal(t.from));
  const sorted = [...notifications].sort((a, b) => a.cycle - b.cycle);
  const v = (detail: string) => out.push({ invariant: 'oneNotificationPerTerminal', operationId: operation.id, detail });
  for (const n of sorted) if (n.ownerUserId !== operation.ownerUserId) v(`notification of cycle ${n.cycle} addressed to ${n.ownerUserId}, not the owner ${operation.ownerUserId}`);
  if (terminals.length !== sorted.length) {
    v(`${terminals.length} terminal transition(s) (${terminals.map((t) => t.to).join(', ') || 'none'}) but ${sorted.length} notification(s) (${sorted.map((n) => `${n.cycle}:${n.status}`).join(', ') || 'none'})`);
    return;
  }
  terminals.forEach((t, i) => {
    const n = sorted[i];
    if (n && (n.status !== t.to || n.cycle !== t.toCycle)) v(`terminal transition ${i + 1} is ${t.to} in cycle ${t.toCycle}, its notification says ${n.status} in cycle ${n.cycle}`);
  });
}

function checkRuns(operation: OperationRecord, effects: readonly RunRecord[], executions: readonly RunRecord[], out: Violation[]): void {
  const list = effects.map((e) => `${runKey(e)} by ${e.worker}`).join(', ');
  if (operation.status === 'succeeded') {
    if (effects.length !== 1) out.push({ invariant: 'effectOnce', operationId: operation.id, detail: `succeeded with ${effects.length} effects (${list || 'none'})` });
    const stale = effects.filter((e) => e.attempt !== operation.attempt || e.cycle !== operation.cycle);
    if (stale.length > 0) {
      out.push({
        invariant: 'noWriteAfterTakeover',
        operationId: operation.id,
        detail: `success committed by ${stale.map(runKey).join(', ')} while ${runKey(operation)} held the lease`,
      });
    }
  } else if (effects.length > 0) {
    out.push({ invariant: 'effectOnce', operationId: operation.id, detail: `${operation.status} but ${effects.length} effect(s) committed (${list})` });
  }
  for (const [key, runs] of groupBy(executions, runKey)) {
    if (runs.length > 1) out.push({ invariant: 'oneExecutionPerClaim', operationId: operation.id, detail: `claim ${key} ran ${runs.length} times (${runs.map((r) => r.worker).join(', ')})` });
  }
}

function checkCapacity(operation: OperationRecord, pools: readonly string[], out: Violation[]): void {
  const v = (detail: string) => out.push({ invariant: 'capacityMatchesActive', operationId: operation.id, detail });
  const kinds = pools.map((p) => p.split(':')[0] ?? p);
  const admission = kinds.filter((k) => k !== 'route').sort();
  const routes = kinds.filter((k) => k === 'route').length;
  const expected = isActive(operation.status) ? ['global', 'owner'] : [];
  if (admission.join(',') !== expected.join(',')) v(`${operation.status} holds [${pools.join(', ')}], expected ${expected.length ? 'one owner and one global slot' : 'none'}`);
  for (const pool of pools) if (pool.startsWith('owner:') && !pool.endsWith(`:${operation.ownerUserId}`)) v(`holds ${pool}, not a pool of its owner ${operation.ownerUserId}`);
  if (routes > (operation.status === 'running' ? 1 : 0)) v(`${operation.status} holds ${routes} route slot(s)`);
}

function checkLiveness(operation: OperationRecord, readAtMs: number, stuckAfterMs: number, out: Violation[]): void {
  if (!isActive(operation.status)) return;
  const due = operation.status === 'running' ? operation.leaseExpiresAtMs : operation.availableAtMs;
  if (due !== null && readAtMs - due > stuckAfterMs) {
    out.push({ invariant: 'terminalOrActive', operationId: operation.id, detail: `${operation.status} and due ${Math.round((readAtMs - due) / 1000)} s ago: stuck` });
  }
}

function checkAdmissions(history: ChaosHistory, byId: ReadonlyMap<string, OperationRecord>, out: Violation[]): void {
  for (const [key, records] of groupBy(history.admitted, (a) => `${a.ownerUserId}/${a.key}`)) {
    const ids = [...new Set(records.map((r) => r.id))];
    if (ids.length > 1) out.push({ invariant: 'oneOperationPerKey', detail: `key ${key} answered with ${ids.length} operations: ${ids.join(', ')}` });
  }
  for (const record of history.admitted) {
    const operation = byId.get(record.id);
    if (!operation) out.push({ invariant: 'admittedExists', operationId: record.id, detail: `admitted to ${record.ownerUserId} with key ${record.key}, not in the database: lost` });
    else if (operation.ownerUserId !== record.ownerUserId || operation.key !== record.key) {
      out.push({ invariant: 'admittedExists', operationId: record.id, detail: `admitted to ${record.ownerUserId}/${record.key}, stored as ${operation.ownerUserId}/${operation.key}` });
    }
  }
}

/**
 * Checks a recorded chaos history against its invariants ({@link INVARIANTS}). Pure: the same history always gives the
 * same violations, so a saved bad history is a regression test of the checker itself.
 */
export function checkHistory(history: ChaosHistory, options: CheckOptions = {}): CheckResult {
  const stuckAfterMs = options.stuckAfterMs ?? 60_000;
  const out: Violation[] = [];
  const byId = new Map(history.operations.map((o) => [o.id, o]));
  checkAdmissions(history, byId, out);
  const transitionsOf = groupBy(history.transitions, (t) => t.operationId);
  const effectsOf = groupBy(history.effects, (e) => e.operationId);
  const executionsOf = groupBy(history.executions, (e) => e.operationId);
  const notificationsOf = groupBy(history.notifications, (n) => n.operationId);
  const slotsOf = groupBy(history.capacity, (c) => c.operationId);
  const statuses: Record<string, number> = {};
  let stillActive = 0;
  let reExecutedSuccesses = 0;
  for (const operation of history.operations) {
    statuses[operation.status] = (statuses[operation.status] ?? 0) + 1;
    if (isActive(operation.status)) stillActive += 1;
    if (!(ALL_STATUSES as readonly string[]).includes(operation.status as OperationStatus)) {
      out.push({ invariant: 'validState', operationId: operation.id, detail: `status ${operation.status}` });
    }
    const transitions = [...(transitionsOf.get(operation.id) ?? [])].sort((a, b) => a.seq - b.seq);
    const executions = executionsOf.get(operation.id) ?? [];
    if (operation.status === 'succeeded' && executions.length > 1) reExecutedSuccesses += 1;
    checkTransitions(operation, transitions, out);
    checkLiveness(operation, history.readAtMs, stuckAfterMs, out);
    checkRuns(operation, effectsOf.get(operation.id) ?? [], executions, out);
    checkNotifications(operation, transitions, notificationsOf.get(operation.id) ?? [], out);
    checkCapacity(operation, (slotsOf.get(operation.id) ?? []).map((s) => s.poolKey), out);
  }
  for (const [operationId] of effectsOf) {
    if (!byId.has(operationId)) out.push({ invariant: 'effectOnce', operationId, detail: 'effect of an operation that does not exist' });
  }
  for (const [operationId, slots] of slotsOf) {
    if (!byId.has(operationId)) out.push({ invariant: 'capacityMatchesActive', operationId, detail: `slots [${slots.map((s) => s.poolKey).join(', ')}] held by an operation that does not exist` });
  }
  for (const broken of history.chains.broken) {
    out.push({ invariant: 'chainsVerify', operationId: broken.operationId, detail: `chain breaks at checkpoint ${broken.seq}: ${broken.reason}` });
  }
  return {
    violations: out,
    statuses,
    stillActive,
    effects: history.effects.length,
    executions: history.executions.length,
    reExecutedSuccesses,
    notifications: history.notifications.length,
    transitions: history.transitions.length,
  };
}
