import { ACTIVE_STATUSES, ALL_STATUSES, TERMINAL_STATUSES, TRANSITIONS, type OperationStatus } from '../lib/operations/lifecycle/operation-status.js';
import type { ChaosHistory, ExternalCallRecord, OperationRecord, RunRecord, TransitionRecord } from './history.js';

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
  noCallAfterLeaseEnd: 'no external call of an attempt arrives after its lease ended',
  oneNotificationPerTerminal: 'exactly one notification per terminal transition, to the owner',
  capacityMatchesActive: "capacity reservations equal the active operations: their global slots, their owner's counters (active, running)",
  chainsVerify: 'every recovery-ledger chain verifies',
  noInternalError: 'no API answer was a 500 (a database outage answers 503)',
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
  /** External calls the chaos task made (recorded by the harness's service). */
  readonly externalCalls: number;
  /**
   * Over the leases that ended by expiring (the sweeper's expiry, or a claim taking an expired lease over) — the
   * attempts that lost their lease rather than ending it — the least time, in **ms**, by which a recorded call arrived
   * before its lease ended (negative: after); null when no such lease had calls. How close a fenced attempt came to
   * outliving its lease: about the fence margin when the fence did its job.
   */
  readonly closestCallToExpiryMs: number | null;
}

/**
 * How late, in **ms**, a recorded external call may arrive past its attempt's lease end (or before its claim) and
 * still count as inside the lease: the recording service's own latency — it stamps a call when its thread's event loop
 * reads the request, a fraction of a millisecond after the bytes arrived (it does nothing else) — and the whole-ms
 * truncation of both the stamps and the database times.
 */
export const CALL_ARRIVAL_MARGIN_MS = 5;

/** Options of {@link checkHistory}. */
export interface CheckOptions {
  /**
   * How long, in **ms**, an active operation may sit past its due time (a claimable one past `available_at`, a running
   * one past its lease) before it counts as stuck rather than legitimately active. @default 60000
   */
  readonly stuckAfterMs?: number;
  /** See {@link CALL_ARRIVAL_MARGIN_MS}. @default CALL_ARRIVAL_MARGIN_MS */
  readonly callMarginMs?: number;
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

/** One lease an attempt held, on the database clock (ms since the epoch). */
export interface LeaseSpan {
  /** When the claim that gave the lease ran. */
  readonly startMs: number;
  /** When the lease ended; `undefined` while it holds (the row's current lease end is then used). */
  readonly endMs: number | undefined;
  /** Whether it ended by expiring (rather than by its attempt's own write, or not yet). */
  readonly expired: boolean;
  /** How it ended, for the report. */
  readonly endedBy: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The leases each attempt of one operation held, by run key (`c<cycle>a<attempt>`), from its recorded writes in
 * commit order. A lease starts with a write that puts the row in `running` with a new token (a claim: its `at`). It
 * ends with the next status write of the row from `running` in that cycle and attempt — the trigger records only
 * changes of status, attempt, cycle or lease token, so every such write ends it — at the earlier of that write's `at`
 * and the lease end the row had just before it (`fromLeaseExpiresAtMs`):
 *
 * - the sweeper's expiry (or a claim that takes an expired lease over) runs after the lease ended, and no heartbeat
 *   extends an expired lease (the guard demands `lease_expires_at > now`), so the row's lease end just before that
 *   write is **exactly** where the lease ended;
 * - the attempt's own completion, failure or cancel runs while its lease holds, and ends it: the write's `at` (its
 *   statement's start, a hair before its commit).
 *
 * A lease still held when the history was read ends at the row's `lease_expires_at` then. Writes without `atMs`
 * (histories recorded before the schema had it) give no lease.
 */
export function leaseSpans(operation: OperationRecord, transitions: readonly TransitionRecord[]): Map<string, LeaseSpan[]> {
  const spans = new Map<string, LeaseSpan[]>();
  const add = (key: string, span: LeaseSpan) => spans.set(key, [...(spans.get(key) ?? []), span]);
  let open: { key: string; cycle: number; attempt: number; startMs: number } | undefined;
  for (const t of transitions) {
    if (t.kind !== 'status' || t.atMs === undefined) continue;
    if (open && t.from === 'running' && t.fromCycle === open.cycle && t.fromAttempt === open.attempt) {
      const expiry = t.fromLeaseExpiresAtMs ?? Number.POSITIVE_INFINITY;
      const expired = expiry <= t.atMs;
      add(open.key, {
        startMs: open.startMs,
        endMs: Math.min(t.atMs, expiry),
        expired,
        endedBy: expired ? `expired at ${iso(expiry)} (running → ${t.to} at seq ${t.seq}, ${iso(t.atMs)})` : `its own ${t.to} at seq ${t.seq} (${iso(t.atMs)})`,
      });
      open = undefined;
    }
    if (t.to === 'running' && t.leaseChanged) open = { key: runKey({ cycle: t.toCycle, attempt: t.toAttempt }), cycle: t.toCycle, attempt: t.toAttempt, startMs: t.atMs };
  }
  if (open) {
    const holds = operation.status === 'running' && operation.cycle === open.cycle && operation.attempt === open.attempt;
    const end = holds ? (operation.leaseExpiresAtMs ?? undefined) : undefined;
    add(open.key, { startMs: open.startMs, endMs: end, expired: false, endedBy: end === undefined ? 'not recorded' : `still held, lease end ${iso(end)}` });
  }
  return spans;
}

/**
 * No external call of an attempt arrives after its lease ended: each recorded call (arrival on the host clock) lies
 * within a lease its (operation, cycle, attempt) held ({@link leaseSpans}, database clock — the same clock: one host),
 * give or take `marginMs`. A call before its claim means the two clocks disagree (the check would be void); a call of
 * a run with no recorded lease is reported too. One violation per run, with its late calls counted.
 * @returns the least (lease end − arrival) over the calls of leases that expired, or null.
 */
function checkExternalCalls(
  operation: OperationRecord,
  transitions: readonly TransitionRecord[],
  calls: readonly ExternalCallRecord[],
  marginMs: number,
  out: Violation[],
): number | null {
  if (calls.length === 0) return null;
  const v = (detail: string) => out.push({ invariant: 'noCallAfterLeaseEnd', operationId: operation.id, detail });
  const spans = leaseSpans(operation, transitions);
  let closest: number | null = null;
  for (const [key, runCalls] of groupBy(calls, runKey)) {
    const held = spans.get(key) ?? [];
    if (held.length === 0) {
      v(`${runCalls.length} call(s) by ${key} (${runCalls[0]?.worker}), which never held a lease of this operation`);
      continue;
    }
    const late: Array<{ call: ExternalCallRecord; byMs: number; span: LeaseSpan }> = [];
    const early: ExternalCallRecord[] = [];
    for (const call of runCalls) {
      // The lease this call belongs to: the last one that started before it arrived (attempts hold one lease each).
      const span = [...held].reverse().find((s) => s.startMs - marginMs <= call.atMs);
      if (!span) {
        early.push(call);
        continue;
      }
      if (span.endMs === undefined) continue;
      const slack = span.endMs - call.atMs;
      if (span.expired && (closest === null || slack < closest)) closest = slack;
      if (slack < -marginMs) late.push({ call, byMs: -slack, span });
    }
    if (late.length > 0) {
      const last = late.reduce((a, b) => (b.byMs > a.byMs ? b : a));
      v(
        `${late.length} of ${runCalls.length} call(s) by ${key} (${last.call.worker}) arrived after its lease ended, the latest ${last.byMs} ms after ` +
          `(at ${iso(last.call.atMs)}; lease ${last.span.endedBy})`,
      );
    }
    if (early.length > 0) v(`${early.length} call(s) by ${key} arrived before its claim (first at ${iso(early[0]!.atMs)}): the host and database clocks disagree`);
  }
  return closest;
}

/**
 * One operation's slots. With counters (`counted`: the history has `ownerCapacity`), an active operation holds one
 * global slot and no per-owner slot row; recorded before counters, one owner and one global slot, and one running slot
 * of its owner exactly while it runs. Either way at most one route slot, only while running.
 */
function checkCapacity(operation: OperationRecord, pools: readonly string[], counted: boolean, out: Violation[]): void {
  const v = (detail: string) => out.push({ invariant: 'capacityMatchesActive', operationId: operation.id, detail });
  const kinds = pools.map((p) => p.split(':')[0] ?? p);
  const admission = kinds.filter((k) => k !== 'route' && k !== 'running').sort();
  const routes = kinds.filter((k) => k === 'route').length;
  const running = kinds.filter((k) => k === 'running').length;
  const expected = !isActive(operation.status) ? [] : counted ? ['global'] : ['global', 'owner'];
  if (admission.join(',') !== expected.join(',')) v(`${operation.status} holds [${pools.join(', ')}], expected ${expected.length ? expected.map((k) => `one ${k}`).join(' and ') + ' slot' : 'none'}`);
  for (const pool of pools) {
    if ((pool.startsWith('owner:') || pool.startsWith('running:')) && !pool.endsWith(`:${operation.ownerUserId}`)) v(`holds ${pool}, not a pool of its owner ${operation.ownerUserId}`);
  }
  if (routes > (operation.status === 'running' ? 1 : 0)) v(`${operation.status} holds ${routes} route slot(s)`);
  // The owner's running limit (docs/design.md §4, fair share): one running slot exactly while an attempt runs — or,
  // with counters, none (the owner's `running` counter counts it, checkOwnerCounters).
  const expectedRunning = !counted && operation.status === 'running' ? 1 : 0;
  if (running !== expectedRunning) v(`${operation.status} holds ${running} running slot(s)`);
}

/**
 * The owners' counters (docs/design.md §4): summed over an owner's task types, `active` equals its active operations
 * and `running` its running ones (an owner with nothing active counts nothing).
 */
function checkOwnerCounters(history: ChaosHistory, out: Violation[]): void {
  if (!history.ownerCapacity) return;
  const truth = new Map<string, { active: number; running: number }>();
  const add = (map: Map<string, { active: number; running: number }>, owner: string, active: number, running: number) => {
    const counts = map.get(owner) ?? { active: 0, running: 0 };
    map.set(owner, { active: counts.active + active, running: counts.running + running });
  };
  for (const operation of history.operations) if (isActive(operation.status)) add(truth, operation.ownerUserId, 1, operation.status === 'running' ? 1 : 0);
  const counted = new Map<string, { active: number; running: number }>();
  for (const row of history.ownerCapacity) add(counted, row.ownerUserId, row.active, row.running);
  for (const owner of new Set([...truth.keys(), ...counted.keys()])) {
    const want = truth.get(owner) ?? { active: 0, running: 0 };
    const got = counted.get(owner) ?? { active: 0, running: 0 };
    if (want.active !== got.active || want.running !== got.running) {
      out.push({ invariant: 'capacityMatchesActive', detail: `owner ${owner} counts ${got.active} active / ${got.running} running, has ${want.active} / ${want.running}` });
    }
  }
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
  const callMarginMs = options.callMarginMs ?? CALL_ARRIVAL_MARGIN_MS;
  const calls = history.externalCalls ?? [];
  const callsOf = groupBy(calls, (c) => c.operationId);
  let closestCallToExpiryMs: number | null = null;
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
    checkCapacity(operation, (slotsOf.get(operation.id) ?? []).map((s) => s.poolKey), history.ownerCapacity !== undefined, out);
    const closest = checkExternalCalls(operation, transitions, callsOf.get(operation.id) ?? [], callMarginMs, out);
    if (closest !== null && (closestCallToExpiryMs === null || closest < closestCallToExpiryMs)) closestCallToExpiryMs = closest;
  }
  for (const [operationId, orphan] of callsOf) {
    if (!byId.has(operationId)) out.push({ invariant: 'noCallAfterLeaseEnd', operationId, detail: `${orphan.length} call(s) for an operation that does not exist` });
  }
  for (const [operationId] of effectsOf) {
    if (!byId.has(operationId)) out.push({ invariant: 'effectOnce', operationId, detail: 'effect of an operation that does not exist' });
  }
  checkOwnerCounters(history, out);
  for (const [operationId, slots] of slotsOf) {
    if (!byId.has(operationId)) out.push({ invariant: 'capacityMatchesActive', operationId, detail: `slots [${slots.map((s) => s.poolKey).join(', ')}] held by an operation that does not exist` });
  }
  const internalErrors = history.apiAnswers?.['500'] ?? 0;
  if (internalErrors > 0) out.push({ invariant: 'noInternalError', detail: `${internalErrors} API answer(s) were 500 (see api-and-sweeper.log)` });
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
    externalCalls: calls.length,
    closestCallToExpiryMs,
  };
}
