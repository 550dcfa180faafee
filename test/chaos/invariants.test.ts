import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChaosHistory } from '../../chaos/history.js';
import { checkHistory, INVARIANTS, type InvariantName } from '../../chaos/invariants.js';

/**
 * A history recorded by `npm run chaos -- --quick --seed 7` on a deliberately broken build whose completion guard
 * (`updateUnderLease`) checked only `status = 'running'` — no lease token, no expiry — trimmed to three operations a
 * stalled worker completed after the sweeper had handed them to another attempt, and twelve clean ones.
 */
const BROKEN_GUARD: ChaosHistory = JSON.parse(readFileSync(new URL('./fixtures/completion-guard-without-lease-token.json', import.meta.url), 'utf8'));
const TAKEN_OVER = ['18e5ec0e-f0d9-4536-9f2d-dfe4487c2fa7', '20119714-9b86-41f5-9977-2cacdec831f9', '3e8044da-3502-44df-86c8-0b9eb56d82b3'];

/** The recorded history without the three operations the broken guard corrupted. */
function cleanHistory(): ChaosHistory {
  const keep = (id: string) => !TAKEN_OVER.includes(id);
  const h = structuredClone(BROKEN_GUARD);
  return {
    ...h,
    admitted: h.admitted.filter((a) => keep(a.id)),
    operations: h.operations.filter((o) => keep(o.id)),
    effects: h.effects.filter((e) => keep(e.operationId)),
    notifications: h.notifications.filter((n) => keep(n.operationId)),
    transitions: h.transitions.filter((t) => keep(t.operationId)),
    capacity: h.capacity.filter((c) => keep(c.operationId)),
  };
}

const invariantsOf = (history: ChaosHistory) => [...new Set(checkHistory(history).violations.map((v) => v.invariant))].sort();

describe('chaos invariant checker', () => {
  it('reports every success a stalled worker committed after its lease was taken over, on a history recorded from a broken completion guard', () => {
    const { violations } = checkHistory(BROKEN_GUARD);
    expect(violations.map((v) => v.invariant)).toEqual(['noWriteAfterTakeover', 'noWriteAfterTakeover', 'noWriteAfterTakeover']);
    expect(violations.map((v) => v.operationId).sort()).toEqual(TAKEN_OVER);
    expect(violations[0]?.detail).toMatch(/^success committed by attempt \d+ while attempt \d+ held the lease$/);
  });

  it('finds nothing wrong with the operations of the same run that the broken guard did not corrupt', () => {
    const history = cleanHistory();
    expect(history.operations.length).toBe(12);
    expect(checkHistory(history).violations).toEqual([]);
  });

  const op = (h: ChaosHistory, status: string) => {
    const found = h.operations.find((o) => o.status === status);
    if (!found) throw new Error(`the fixture has no ${status} operation`);
    return found;
  };
  const breakages: ReadonlyArray<readonly [InvariantName, string, (h: ChaosHistory) => ChaosHistory]> = [
    ['admittedExists', 'an admitted operation missing from the database', (h) => ({ ...h, operations: h.operations.slice(1) })],
    ['oneOperationPerKey', 'one key answered with two operations', (h) => ({ ...h, admitted: [...h.admitted, { ...h.admitted[0]!, id: h.admitted[1]!.id }] })],
    ['validState', 'a status outside the table', (h) => ({ ...h, operations: h.operations.map((o, i) => (i === 0 ? { ...o, status: 'paused' } : o)) })],
    [
      'terminalOrActive',
      'a queued operation due long ago',
      (h) => ({ ...h, operations: h.operations.map((o, i) => (i === 0 ? { ...o, status: 'queued', availableAtMs: h.readAtMs - 3_600_000 } : o)) }),
    ],
    [
      'transitionsAllowed',
      'a terminal operation that ran again',
      (h) => {
        const s = op(h, 'succeeded');
        return { ...h, transitions: [...h.transitions, { seq: 1e9, operationId: s.id, from: 'succeeded', to: 'running', fromAttempt: s.attempt, toAttempt: s.attempt + 1, leaseChanged: true }] };
      },
    ],
    ['effectOnce', 'a success applied twice', (h) => ({ ...h, effects: [...h.effects, { ...h.effects[0]!, worker: 'worker-9#1' }] })],
    ['oneNotificationPerTerminal', 'a terminal transition without its notification', (h) => ({ ...h, notifications: h.notifications.slice(1) })],
    ['capacityMatchesActive', 'a finished operation still holding its slot', (h) => ({ ...h, capacity: [...h.capacity, { poolKey: 'owner:x', operationId: op(h, 'succeeded').id }] })],
    ['chainsVerify', 'a broken recovery chain', (h) => ({ ...h, chains: { checked: 1, broken: [{ operationId: 'r-1', seq: 2, reason: 'hash mismatch' }] } })],
  ];

  it.each(breakages)('can fail: %s is reported for %s', (invariant, _what, corrupt) => {
    const found = invariantsOf(corrupt(cleanHistory()));
    expect(found).toContain(invariant);
    expect(Object.keys(INVARIANTS)).toContain(invariant);
  });

  it('reports the lease token of a running operation being replaced without a takeover', () => {
    const h = cleanHistory();
    const s = op(h, 'succeeded');
    const stolen: ChaosHistory = { ...h, transitions: [...h.transitions, { seq: 0.5, operationId: s.id, from: 'running', to: 'running', fromAttempt: 1, toAttempt: 2, leaseChanged: true }] };
    expect(checkHistory(stolen).violations.map((v) => v.invariant)).toContain('noWriteAfterTakeover');
  });
});
