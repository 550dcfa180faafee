import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChaosHistory, TransitionRecord } from '../../chaos/history.js';
import { checkHistory, stampOf, type InvariantName } from '../../chaos/invariants.js';

/**
 * A history recorded by `npm run chaos -- --quick --seed 7` on a deliberately broken build whose lease guard
 * (`updateUnderLease`: heartbeats, progress, completion, failure) checked only `status = 'running'` — no lease token,
 * no expiry — trimmed to three operations that stalled workers wrote to after the sweeper had handed them to another
 * attempt, and twelve clean ones.
 */
const BROKEN_GUARD: ChaosHistory = JSON.parse(readFileSync(new URL('./fixtures/completion-guard-without-lease-token.json', import.meta.url), 'utf8'));
const TAKEN_OVER = ['319b5710-daf5-4df2-8cc7-43c6b70566e4', '3ad1072f-3597-440c-984a-3803b7418d03', '46afafe6-25d8-43d2-978f-c9b53a9aceb6'];

/** The recorded history without the three operations the broken guard corrupted. */
function cleanHistory(): ChaosHistory {
  const keep = (id: string) => !TAKEN_OVER.includes(id);
  const h = structuredClone(BROKEN_GUARD);
  return {
    ...h,
    admitted: h.admitted.filter((a) => keep(a.id)),
    operations: h.operations.filter((o) => keep(o.id)),
    effects: h.effects.filter((e) => keep(e.operationId)),
    executions: h.executions.filter((e) => keep(e.operationId)),
    notifications: h.notifications.filter((n) => keep(n.operationId)),
    transitions: h.transitions.filter((t) => keep(t.operationId)),
    capacity: h.capacity.filter((c) => keep(c.operationId)),
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
    ['chainsVerify', 'a broken recovery chain', (h) => ({ ...h, chains: { checked: 1, broken: [{ operationId: 'r-1', seq: 2, reason: 'hash mismatch' }] } })],
  ];

  it.each(breakages)('can fail: %s is reported for %s', (invariant, _what, corrupt) => {
    expect(invariantsOf(corrupt(cleanHistory()))).toContain(invariant);
  });
});
