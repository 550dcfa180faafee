import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChaosHistory, TransitionRecord } from '../../chaos/history.js';
import { CALL_ARRIVAL_MARGIN_MS, checkHistory, leaseSpans, stampOf, type InvariantName } from '../../chaos/invariants.js';

/**
 * A history recorded by `npm run chaos -- --quick --seed 7` on a deliberately broken build whose lease guard
 * (`updateUnderLease`: heartbeats, progress, completion, failure) checked only `status = 'running'` — no lease token,
 * no expiry — trimmed to three operations that stalled workers wrote to after the sweeper had handed them to another
 * attempt, and twelve clean ones.
 */
const BROKEN_GUARD: ChaosHistory = JSON.parse(readFileSync(new URL('./fixtures/completion-guard-without-lease-token.json', import.meta.url), 'utf8'));
const TAKEN_OVER = ['319b5710-daf5-4df2-8cc7-43c6b70566e4', '3ad1072f-3597-440c-984a-3803b7418d03', '46afafe6-25d8-43d2-978f-c9b53a9aceb6'];

/** `history` without the listed operations, in every part that names an operation. */
function withoutOperations(history: ChaosHistory, left: Iterable<string | undefined>): ChaosHistory {
  const drop = new Set(left);
  const keep = (id: string) => !drop.has(id);
  const h = structuredClone(history);
  return {
    ...h,
    admitted: h.admitted.filter((a) => keep(a.id)),
    operations: h.operations.filter((o) => keep(o.id)),
    effects: h.effects.filter((e) => keep(e.operationId)),
    executions: h.executions.filter((e) => keep(e.operationId)),
    notifications: h.notifications.filter((n) => keep(n.operationId)),
    transitions: h.transitions.filter((t) => keep(t.operationId)),
    capacity: h.capacity.filter((c) => keep(c.operationId)),
    ...(h.externalCalls ? { externalCalls: h.externalCalls.filter((c) => keep(c.operationId)) } : {}),
  };
}

/** The recorded history without the three operations the broken guard corrupted. */
function cleanHistory(): ChaosHistory {
  return withoutOperations(BROKEN_GUARD, TAKEN_OVER);
}

/**
 * {@link cleanHistory} as this release records it: per-owner capacity as counters (`ownerCapacity`, from the active
 * operations), no per-owner slot rows.
 */
function countedHistory(): ChaosHistory {
  const h = cleanHistory();
  const active = h.operations.filter((o) => ['queued', 'running', 'waiting_for_retry', 'waiting_for_external_fallback'].includes(o.status));
  const owners = [...new Set(h.operations.map((o) => o.ownerUserId))];
  return {
    ...h,
    capacity: h.capacity.filter((c) => !c.poolKey.startsWith('owner:') && !c.poolKey.startsWith('running:')),
    ownerCapacity: owners.map((ownerUserId) => ({
      taskType: 'chaos.effect',
      ownerUserId,
      active: active.filter((o) => o.ownerUserId === ownerUserId).length,
      running: active.filter((o) => o.ownerUserId === ownerUserId && o.status === 'running').length,
    })),
  };
}

const invariantsOf = (history: ChaosHistory) => [...new Set(checkHistory(history).violations.map((v) => v.invariant))].sort();
const succeeded = (h: ChaosHistory) => {
  const found = h.operations.find((o) => o.status === 'succeeded');
  if (!found) throw new Error('the fixture has no succeeded operation');
  return found;
};
const transitionsOf = (h: ChaosHistory, id: string) => h.transitions.filter((t) => t.operationId === id);
const replace = (h: ChaosHistory, from: TransitionRecord, to: TransitionRecord): ChaosHistory => ({ ...h, transitions: h.transitions.map((t) => (t === from ? to : t)) });

describe('chaos invariant checker', () => {
  it('reports every write stalled workers made after their lease was taken over, on a history recorded from a broken lease guard', () => {
    const { violations } = checkHistory(BROKEN_GUARD);
    expect(new Set(violations.map((v) => v.invariant))).toEqual(new Set(['noWriteAfterTakeover']));
    expect([...new Set(violations.map((v) => v.operationId))].sort()).toEqual(TAKEN_OVER);
    const details = violations.map((v) => v.detail).join('\n');
    expect(details).toMatch(/progress of c0a1 written while c0a2 held the lease/);
    expect(details).toMatch(/waiting_for_retry written by c0a1 while c0a2 held the lease/);
    expect(details).toMatch(/success committed by c0a\d while c0a\d held the lease/);
  });

  it('finds nothing wrong with the operations of the same run that the broken guard did not corrupt', () => {
    const history = cleanHistory();
    expect(history.operations).toHaveLength(12);
    expect(history.transitions.some((t) => t.kind === 'progress')).toBe(true);
    expect(checkHistory(history)).toMatchObject({ violations: [], stillActive: 0, effects: 11 });
  });

  it('reads the run stamp the chaos task puts in progress stages and failure messages', () => {
    expect(stampOf('working:c2a3')).toEqual({ cycle: 2, attempt: 3 });
    expect(stampOf('chaos c0a1: failing on purpose')).toEqual({ cycle: 0, attempt: 1 });
    expect(stampOf('lease expired')).toBeUndefined();
    expect(stampOf(null)).toBeUndefined();
  });

  const breakages: ReadonlyArray<readonly [InvariantName, string, (h: ChaosHistory) => ChaosHistory]> = [
    ['admittedExists', 'an admitted operation missing from the database', (h) => ({ ...h, operations: h.operations.filter((o) => o.id !== h.admitted[0]!.id) })],
    [
      'admittedExists',
      'two keys answered with each other’s operation',
      (h) => ({ ...h, admitted: h.admitted.map((a, i) => (i === 0 ? { ...a, id: h.admitted[1]!.id } : i === 1 ? { ...a, id: h.admitted[0]!.id } : a)) }),
    ],
    ['oneOperationPerKey', 'one key answered with two operations', (h) => ({ ...h, admitted: [...h.admitted, { ...h.admitted[0]!, id: h.admitted[1]!.id }] })],
    ['validState', 'a status outside the table', (h) => ({ ...h, operations: h.operations.map((o, i) => (i === 0 ? { ...o, status: 'paused' } : o)) })],
    [
      'terminalOrActive',
      'a queued operation due an hour ago',
      (h) => ({ ...h, operations: h.operations.map((o, i) => (i === 0 ? { ...o, status: 'queued', availableAtMs: h.readAtMs - 3_600_000 } : o)) }),
    ],
    [
      'transitionsAllowed',
      'a terminal operation that ran again',
      (h) => {
        const s = succeeded(h);
        const last = transitionsOf(h, s.id).at(-1)!;
        return { ...h, transitions: [...h.transitions, { ...last, seq: last.seq + 1e6, kind: 'status', from: 'succeeded', to: 'running', leaseChanged: true, note: null }] };
      },
    ],
    [
      'transitionsAllowed',
      'a write missing from the middle of the chain',
      (h) => {
        const gone = transitionsOf(h, succeeded(h).id)[1]!;
        return { ...h, transitions: h.transitions.filter((t) => t !== gone) };
      },
    ],
    ['effectOnce', 'a success applied twice', (h) => ({ ...h, effects: [...h.effects, { ...h.effects[0]!, worker: 'worker-9#1' }] })],
    ['oneExecutionPerClaim', 'one claim executed twice', (h) => ({ ...h, executions: [...h.executions, { ...h.executions[0]!, worker: 'worker-9#1' }] })],
    [
      'noWriteAfterTakeover',
      'a progress write stamped by an earlier attempt',
      (h) => {
        const progress = h.transitions.find((t) => t.kind === 'progress')!;
        return replace(h, progress, { ...progress, note: `working:c${progress.fromCycle}a${(progress.fromAttempt ?? 1) + 5}` });
      },
    ],
    [
      'noWriteAfterTakeover',
      'a lease token replaced while running',
      (h) => {
        const claim = transitionsOf(h, succeeded(h).id).find((t) => t.to === 'running')!;
        const stolen: TransitionRecord = { ...claim, seq: claim.seq + 0.5, kind: 'status', from: 'running', to: 'running', fromAttempt: claim.toAttempt, fromCycle: claim.toCycle, leaseChanged: true, note: null };
        return { ...h, transitions: [...h.transitions, stolen] };
      },
    ],
    ['oneNotificationPerTerminal', 'a terminal transition without its notification', (h) => ({ ...h, notifications: h.notifications.slice(1) })],
    ['oneNotificationPerTerminal', 'a notification sent to another owner', (h) => ({ ...h, notifications: h.notifications.map((n, i) => (i === 0 ? { ...n, ownerUserId: 'someone-else' } : n)) })],
    ['capacityMatchesActive', 'a finished operation still holding its slot', (h) => ({ ...h, capacity: [...h.capacity, { poolKey: 'global:chaos.effect', operationId: succeeded(h).id }] })],
    [
      'capacityMatchesActive',
      'a finished operation still holding its owner’s running slot',
      (h) => {
        const s = succeeded(h);
        return { ...h, capacity: [...h.capacity, { poolKey: `running:chaos.effect:${s.ownerUserId}`, operationId: s.id }] };
      },
    ],
    [
      'capacityMatchesActive',
      'an operation holding another owner’s slot',
      (h) => {
        const s = succeeded(h);
        return {
          ...h,
          operations: h.operations.map((o) => (o.id === s.id ? { ...o, status: 'queued', availableAtMs: h.readAtMs } : o)),
          capacity: [...h.capacity, { poolKey: 'owner:chaos.effect:someone-else', operationId: s.id }, { poolKey: 'global:chaos.effect', operationId: s.id }],
        };
      },
    ],
    [
      'capacityMatchesActive',
      'an owner counter that still counts a finished operation',
      () => {
        const h = countedHistory();
        return { ...h, ownerCapacity: h.ownerCapacity!.map((c, i) => (i === 0 ? { ...c, active: c.active + 1 } : c)) };
      },
    ],
    [
      'capacityMatchesActive',
      'a per-owner slot row held where the owner counts in counters',
      () => {
        const h = countedHistory();
        const s = succeeded(h);
        return {
          ...h,
          operations: h.operations.map((o) => (o.id === s.id ? { ...o, status: 'queued', availableAtMs: h.readAtMs } : o)),
          ownerCapacity: h.ownerCapacity!.map((c) => (c.ownerUserId === s.ownerUserId ? { ...c, active: c.active + 1 } : c)),
          capacity: [...h.capacity, { poolKey: `owner:chaos.effect:${s.ownerUserId}`, operationId: s.id }, { poolKey: 'global:chaos.effect', operationId: s.id }],
        };
      },
    ],
    ['chainsVerify', 'a broken recovery chain', (h) => ({ ...h, chains: { checked: 1, broken: [{ operationId: 'r-1', seq: 2, reason: 'hash mismatch' }] } })],
    ['noInternalError', 'an API answer of 500 (503s are allowed)', (h) => ({ ...h, apiAnswers: { '2xx': 10, '503': 4, '500': 1 } })],
  ];

  it('passes the recorded history as this release records it, with per-owner counters', () => {
    expect(checkHistory(countedHistory()).violations).toEqual([]);
  });

  it('a database outage answered 503 breaks no invariant', () => {
    expect(checkHistory({ ...countedHistory(), apiAnswers: { '2xx': 10, '503': 126, '500': 0 } }).violations).toEqual([]);
  });

  it.each(breakages)('can fail: %s is reported for %s', (invariant, _what, corrupt) => {
    expect(invariantsOf(corrupt(cleanHistory()))).toContain(invariant);
  });
});

/**
 * A synthetic history of one operation, on the database clock from `T`: attempt 1 claimed at T, its lease (last
 * extended to T+5 s) expired and the sweeper made it retryable at T+5.8 s; attempt 2 claimed at T+7 s and succeeded at
 * T+9 s. Attempt 1 called out until T+4 s, attempt 2 from T+7.1 s to T+8.9 s: clean.
 */
const T = Date.parse('2026-12-01T12:00:00.000Z');
const OP = '01a233bc-0000-7000-8000-000000000001';
function leaseHistory(): ChaosHistory {
  const base = { operationId: OP, fromLeaseExpiresAtMs: null as number | null };
  const transitions: TransitionRecord[] = [
    { ...base, seq: 1, kind: 'status', from: null, to: 'queued', fromAttempt: null, toAttempt: 0, fromCycle: null, toCycle: 0, leaseChanged: false, note: null, atMs: T - 100 },
    { ...base, seq: 2, kind: 'status', from: 'queued', to: 'running', fromAttempt: 0, toAttempt: 1, fromCycle: 0, toCycle: 0, leaseChanged: true, note: null, atMs: T },
    { ...base, seq: 3, kind: 'progress', from: 'running', to: 'running', fromAttempt: 1, toAttempt: 1, fromCycle: 0, toCycle: 0, leaseChanged: false, note: 'working:c0a1', atMs: T + 1_000, fromLeaseExpiresAtMs: T + 5_000 },
    { ...base, seq: 4, kind: 'status', from: 'running', to: 'waiting_for_retry', fromAttempt: 1, toAttempt: 1, fromCycle: 0, toCycle: 0, leaseChanged: true, note: null, atMs: T + 5_800, fromLeaseExpiresAtMs: T + 5_000 },
    { ...base, seq: 5, kind: 'status', from: 'waiting_for_retry', to: 'running', fromAttempt: 1, toAttempt: 2, fromCycle: 0, toCycle: 0, leaseChanged: true, note: null, atMs: T + 7_000 },
    { ...base, seq: 6, kind: 'status', from: 'running', to: 'succeeded', fromAttempt: 2, toAttempt: 2, fromCycle: 0, toCycle: 0, leaseChanged: true, note: null, atMs: T + 9_000, fromLeaseExpiresAtMs: T + 12_000 },
  ];
  const call = (attempt: number, at: number) => ({ operationId: OP, cycle: 0, attempt, worker: `worker-${attempt}#1`, atMs: at });
  return {
    readAtMs: T + 60_000,
    admitted: [{ ownerUserId: 'owner-1', key: 'k-1', id: OP }],
    operations: [{ id: OP, ownerUserId: 'owner-1', key: 'k-1', status: 'succeeded', attempt: 2, cycle: 0, availableAtMs: null, leaseExpiresAtMs: null }],
    effects: [{ operationId: OP, cycle: 0, attempt: 2, worker: 'worker-2#1' }],
    executions: [
      { operationId: OP, cycle: 0, attempt: 1, worker: 'worker-1#1' },
      { operationId: OP, cycle: 0, attempt: 2, worker: 'worker-2#1' },
    ],
    notifications: [{ operationId: OP, ownerUserId: 'owner-1', cycle: 0, status: 'succeeded' }],
    transitions,
    capacity: [],
    externalCalls: [...[100, 1_500, 4_000].map((at) => call(1, T + at)), ...[7_100, 8_000, 8_900].map((at) => call(2, T + at))],
    chains: { checked: 0, broken: [] },
  };
}
const withCalls = (h: ChaosHistory, ...calls: Array<[attempt: number, atMs: number]>): ChaosHistory => ({
  ...h,
  externalCalls: [...(h.externalCalls ?? []), ...calls.map(([attempt, atMs]) => ({ operationId: OP, cycle: 0, attempt, worker: `worker-${attempt}#1`, atMs }))],
});
const callViolations = (h: ChaosHistory) => checkHistory(h).violations.filter((v) => v.invariant === 'noCallAfterLeaseEnd');

describe('chaos invariant: no external call of an attempt arrives after its lease ended', () => {
  it('passes a history whose attempts called out only while they held their lease', () => {
    const result = checkHistory(leaseHistory());
    expect(result.violations).toEqual([]);
    expect(result).toMatchObject({ externalCalls: 6, closestCallToExpiryMs: 1_000 });
  });

  it('derives each lease from the recorded writes: an expired lease ends at its expiry, an ended one at its own write', () => {
    const h = leaseHistory();
    const spans = leaseSpans(h.operations[0]!, h.transitions);
    expect(spans.get('c0a1')).toEqual([{ startMs: T, endMs: T + 5_000, expired: true, endedBy: expect.stringMatching(/^expired at 2026-12-01T12:00:05.000Z \(running → waiting_for_retry at seq 4/) }]);
    expect(spans.get('c0a2')).toEqual([{ startMs: T + 7_000, endMs: T + 9_000, expired: false, endedBy: expect.stringMatching(/^its own succeeded at seq 6/) }]);
  });

  it('catches a call that arrived after the lease expired, though before the sweeper noticed', () => {
    // T+5.3 s: 300 ms after the lease end, 500 ms before the sweeper's write (a bound from that write would miss it).
    const violations = callViolations(withCalls(leaseHistory(), [1, T + 5_300], [1, T + 5_100]));
    expect(violations).toEqual([
      {
        invariant: 'noCallAfterLeaseEnd',
        operationId: OP,
        detail: expect.stringMatching(/^2 of 5 call\(s\) by c0a1 \(worker-1#1\) arrived after its lease ended, the latest 300 ms after \(at 2026-12-01T12:00:05.300Z; lease expired at 2026-12-01T12:00:05.000Z/),
      },
    ]);
    expect(checkHistory(withCalls(leaseHistory(), [1, T + 5_300])).closestCallToExpiryMs).toBe(-300);
  });

  it('catches a call that arrived after the attempt ended its own lease', () => {
    expect(callViolations(withCalls(leaseHistory(), [2, T + 9_050]))).toEqual([
      { invariant: 'noCallAfterLeaseEnd', operationId: OP, detail: expect.stringMatching(/^1 of 4 call\(s\) by c0a2 .* the latest 50 ms after .*its own succeeded at seq 6/) },
    ]);
  });

  it(`allows the recording service's margin (${CALL_ARRIVAL_MARGIN_MS} ms) and no more`, () => {
    expect(callViolations(withCalls(leaseHistory(), [1, T + 5_000 + CALL_ARRIVAL_MARGIN_MS], [2, T + 9_000 + CALL_ARRIVAL_MARGIN_MS]))).toEqual([]);
    expect(callViolations(withCalls(leaseHistory(), [1, T + 5_000 + CALL_ARRIVAL_MARGIN_MS + 1]))).toHaveLength(1);
    expect(checkHistory(withCalls(leaseHistory(), [1, T + 5_300]), { callMarginMs: 300 }).violations).toEqual([]);
  });

  it('reports a call before its claim (the host and database clocks disagree) and one by an attempt that never held a lease', () => {
    const details = callViolations(withCalls(leaseHistory(), [2, T + 6_000], [3, T + 8_000])).map((v) => v.detail);
    expect(details).toEqual([expect.stringMatching(/^1 call\(s\) by c0a2 arrived before its claim .*clocks disagree/), expect.stringMatching(/^1 call\(s\) by c0a3 \(worker-3#1\), which never held a lease/)]);
  });

  it('bounds a lease still held at the end by the row’s lease end', () => {
    const h = leaseHistory();
    const running: ChaosHistory = {
      ...h,
      operations: [{ ...h.operations[0]!, status: 'running', leaseExpiresAtMs: T + 11_000 }],
      transitions: h.transitions.filter((t) => t.seq !== 6),
      effects: [],
      notifications: [],
      capacity: [
        { poolKey: 'owner:chaos.effect:owner-1', operationId: OP },
        { poolKey: 'global:chaos.effect', operationId: OP },
        { poolKey: 'running:chaos.effect:owner-1', operationId: OP },
      ],
    };
    expect(checkHistory(withCalls(running, [2, T + 10_500])).violations).toEqual([]);
    expect(callViolations(withCalls(running, [2, T + 11_500]))[0]?.detail).toMatch(/the latest 500 ms after .*still held, lease end 2026-12-01T12:00:11.000Z/);
  });

  it('has nothing to check in a history recorded before the harness had external calls', () => {
    expect(BROKEN_GUARD.externalCalls).toBeUndefined();
    expect(checkHistory(cleanHistory())).toMatchObject({ violations: [], externalCalls: 0, closestCallToExpiryMs: null });
  });
});

/**
 * A history recorded by `npm run chaos -- --quick --seed 7` with self-fencing switched off (`startHeartbeats` never
 * calling `onVerdict('fenced')`), trimmed to the 16 operations whose attempts on worker-2 kept calling out after their
 * leases ended while the harness had cut that worker off from MariaDB (its log: "network partition: worker-2 cut off
 * from MariaDB for 7.9 s" at 23:01:34.5), and 12 clean ones. With self-fencing on, the same fault leaves none: each
 * attempt stops calling a fence margin (1 s) before its lease end.
 */
const UNFENCED: ChaosHistory = JSON.parse(readFileSync(new URL('./fixtures/external-calls-without-self-fencing.json', import.meta.url), 'utf8'));
const PARTITION = { from: Date.parse('2026-12-01T23:01:34.5Z'), to: Date.parse('2026-12-01T23:01:34.5Z') + 7_900 };

describe('chaos invariant on a history recorded without self-fencing', () => {
  const { violations, closestCallToExpiryMs } = checkHistory(UNFENCED);
  const late = new Set(violations.map((v) => v.operationId));

  it('reports every partitioned attempt that kept calling out after its lease ended, and nothing else', () => {
    expect(new Set(violations.map((v) => v.invariant))).toEqual(new Set(['noCallAfterLeaseEnd']));
    expect(late.size).toBe(16);
    for (const v of violations) {
      const match = /by c\d+a\d+ \((worker-\d+#\d+)\) arrived after its lease ended, the latest (\d+) ms after .*lease expired at (\S+) /.exec(v.detail);
      expect(match, v.detail).not.toBeNull();
      const [, worker, lateMs, expiredAt] = match!;
      expect(worker).toBe('worker-2#4');
      expect(Number(lateMs)).toBeGreaterThan(1_000);
      // Each lease ran out while its worker was cut off from the database.
      expect(Date.parse(expiredAt!)).toBeGreaterThan(PARTITION.from);
      expect(Date.parse(expiredAt!)).toBeLessThan(PARTITION.to);
    }
    expect(closestCallToExpiryMs).toBeLessThan(-1_000);
  });

  it('finds nothing wrong with the operations of the same run the partition did not reach', () => {
    const clean = withoutOperations(UNFENCED, late);
    expect(clean.operations).toHaveLength(12);
    expect(clean.externalCalls!.length).toBeGreaterThan(50);
    expect(checkHistory(clean).violations).toEqual([]);
  });
});
