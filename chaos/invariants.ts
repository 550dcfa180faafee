import { ACTIVE_STATUSES, ALL_STATUSES, TERMINAL_STATUSES, TRANSITIONS, type OperationStatus } from '../lib/operations/operation-status.js';
import type { ChaosHistory, OperationRecord, TransitionRecord } from './history.js';

/** The invariants the chaos harness checks (issue 8), by name. */
export const INVARIANTS = Object.freeze({
  admittedExists: 'every admitted operation exists with its owner and key',
  oneOperationPerKey: 'one idempotency key names one operation',
  validState: 'every operation is in a state of the transition table',
  terminalOrActive: 'every operation is terminal or legitimately active (not stuck)',
  transitionsAllowed: 'every recorded transition is in the transition table',
  effectOnce: 'a succeeded operation has exactly one effect, any other none',
  noWriteAfterTakeover: 'no lease-token write succeeded after its lease was taken over',
  oneNotificationPerTerminal: 'exactly one notification per terminal transition',
  capacityMatchesActive: 'capacity reservations equal the active operations',
  chainsVerify: 'every recovery-ledger chain verifies',
} as const);
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
  readonly effects: number;
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

const isTerminal = (status: string) => (TERMINAL_STATUSES as readonly string[]).includes(status);
const isActive = (status: string) => (ACTIVE_STATUSES as readonly string[]).includes(status);

/** Whether some row of the transition table moves `from` to `to` (DESIGN §2). */
export function transitionAllowed(from: string, to: string): boolean {
  return Object.values(TRANSITIONS).some((t) => t.to === to && (t.from as readonly string[]).includes(from));
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

function checkTransitions(operation: OperationRecord, transitions: readonly TransitionRecord[], out: Violation[]): void {
  const v = (detail: string) => out.push({ invariant: 'transitionsAllowed', operationId: operation.id, detail });
  if (transitions.length === 0 || transitions[0]?.from !== null) v('no recorded insert: the history of this operation is incomplete');
  for (const t of transitions) {
    if (t.from === null) {
      if (t.to !== 'queued') v(`inserted as ${t.to}, not queued`);
    } else if (t.from === t.to) {
      if (t.leaseChanged && t.to === 'running') {
        out.push({ invariant: 'noWriteAfterTakeover', operationId: operation.id, detail: `lease token replaced while running (attempt ${t.fromAttempt} → ${t.toAttempt}, seq ${t.seq})` });
      }
    } else if (!transitionAllowed(t.from, t.to)) v(`${t.from} → ${t.to} (seq ${t.seq}) is not in the transition table`);
  }
}

function checkNotifications(
  operation: OperationRecord,
  transitions: readonly TransitionRecord[],
  notifications: ReadonlyArray<{ cycle: number; status: string }>,
  out: Violation[],
): void {
  const terminals = transitions.filter((t) => isTerminal(t.to) && (t.from === null || !isTerminal(t.from)));
  const sorted = [...notifications].sort((a, b) => a.cycle - b.cycle);
  if (terminals.length !== sorted.length) {
    out.push({
      invariant: 'oneNotificationPerTerminal',
      operationId: operation.id,
      detail: `${terminals.length} terminal transition(s) (${terminals.map((t) => t.to).join(', ') || 'none'}) but ${sorted.length} notification(s) (${sorted.map((n) => `${n.cycle}:${n.status}`).join(', ') || 'none'})`,
    });
    return;
  }
  terminals.forEach((t, i) => {
    const n = sorted[i];
    if (n && n.status !== t.to) {
      out.push({ invariant: 'oneNotificationPerTerminal', operationId: operation.id, detail: `terminal transition ${i + 1} is ${t.to}, its notification (cycle ${n.cycle}) says ${n.status}` });
    }
  });
}

function checkEffects(operation: OperationRecord, effects: ReadonlyArray<{ attempt: number; worker: string }>, out: Violation[]): void {
  const list = effects.map((e) => `attempt ${e.attempt} by ${e.worker}`).join(', ');
  if (operation.status === 'succeeded') {
    if (effects.length !== 1) out.push({ invariant: 'effectOnce', operationId: operation.id, detail: `succeeded with ${effects.length} effects (${list || 'none'})` });
    const stale = effects.filter((e) => e.attempt !== operation.attempt);
    if (stale.length > 0) {
      out.push({
        invariant: 'noWriteAfterTakeover',
        operationId: operation.id,
        detail: `success committed by attempt ${stale.map((e) => e.attempt).join(', ')} while attempt ${operation.attempt} held the lease`,
      });
    }
  } else if (effects.length > 0) {
    out.push({ invariant: 'effectOnce', operationId: operation.id, detail: `${operation.status} but ${effects.length} effect(s) committed (${list})` });
  }
}

function checkCapacity(operation: OperationRecord, pools: readonly string[], out: Violation[]): void {
  const kinds = pools.map((p) => p.split(':')[0] ?? p);
  const admission = kinds.filter((k) => k !== 'route').sort();
  const routes = kinds.filter((k) => k === 'route').length;
  const expected = isActive(operation.status) ? ['global', 'owner'] : [];
  if (admission.join(',') !== expected.join(',')) {
    out.push({ invariant: 'capacityMatchesActive', operationId: operation.id, detail: `${operation.status} holds [${pools.join(', ')}], expected ${expected.length ? 'one owner and one global slot' : 'none'}` });
  }
  if (routes > (operation.status === 'running' ? 1 : 0)) {
    out.push({ invariant: 'capacityMatchesActive', operationId: operation.id, detail: `${operation.status} holds ${routes} route slot(s)` });
  }
}

function checkLiveness(operation: OperationRecord, readAtMs: number, stuckAfterMs: number, out: Violation[]): void {
  if (!isActive(operation.status)) return;
  const due = operation.status === 'running' ? operation.leaseExpiresAtMs : operation.availableAtMs;
  if (due !== null && readAtMs - due > stuckAfterMs) {
    out.push({ invariant: 'terminalOrActive', operationId: operation.id, detail: `${operation.status} and due ${Math.round((readAtMs - due) / 1000)} s ago: stuck` });
  }
}

/**
 * Checks a recorded chaos history against the invariants of issue 8 ({@link INVARIANTS}). Pure: the same history
 * always gives the same violations, so a saved bad history is a regression test of the checker itself.
 */
export function checkHistory(history: ChaosHistory, options: CheckOptions = {}): CheckResult {
  const stuckAfterMs = options.stuckAfterMs ?? 60_000;
  const out: Violation[] = [];
  const byId = new Map(history.operations.map((o) => [o.id, o]));
  for (const [key, records] of groupBy(history.admitted, (a) => `${a.ownerUserId}\u0000${a.key}`)) {
    const ids = [...new Set(records.map((r) => r.id))];
    if (ids.length > 1) out.push({ invariant: 'oneOperationPerKey', detail: `key ${key.replace('\u0000', '/')} answered with ${ids.length} operations: ${ids.join(', ')}` });
  }
  for (const record of history.admitted) {
    const operation = byId.get(record.id);
    if (!operation) out.push({ invariant: 'admittedExists', operationId: record.id, detail: `admitted to ${record.ownerUserId} with key ${record.key}, not in the database: lost` });
    else if (operation.ownerUserId !== record.ownerUserId) out.push({ invariant: 'admittedExists', operationId: record.id, detail: `admitted to ${record.ownerUserId}, stored for ${operation.ownerUserId}` });
  }
  const transitionsOf = groupBy(history.transitions, (t) => t.operationId);
  const effectsOf = groupBy(history.effects, (e) => e.operationId);
  const notificationsOf = groupBy(history.notifications, (n) => n.operationId);
  const slotsOf = groupBy(history.capacity, (c) => c.operationId);
  const statuses: Record<string, number> = {};
  for (const operation of history.operations) {
    statuses[operation.status] = (statuses[operation.status] ?? 0) + 1;
    if (!(ALL_STATUSES as readonly string[]).includes(operation.status as OperationStatus)) {
      out.push({ invariant: 'validState', operationId: operation.id, detail: `status ${operation.status}` });
    }
    const transitions = (transitionsOf.get(operation.id) ?? []).sort((a, b) => a.seq - b.seq);
    checkTransitions(operation, transitions, out);
    checkLiveness(operation, history.readAtMs, stuckAfterMs, out);
    checkEffects(operation, effectsOf.get(operation.id) ?? [], out);
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
  return { violations: out, statuses, effects: history.effects.length, notifications: history.notifications.length, transitions: history.transitions.length };
}
