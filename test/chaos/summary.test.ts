import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, type FaultKind } from '../../chaos/faults.js';
import type { CheckResult } from '../../chaos/invariants.js';
import { parseChaosArgs } from '../../chaos/options.js';
import { renderSummary, summaryOf } from '../../chaos/summary.js';

const faults = Object.fromEntries(FAULT_KINDS.map((k, i) => [k, i + 1])) as Record<FaultKind, number>;
const check: CheckResult = {
  violations: [{ invariant: 'noCallAfterLeaseEnd', operationId: 'op-1', detail: '1 of 9 call(s) by c0a1 (worker-2#1) arrived after its lease ended, the latest 2400 ms after' }],
  statuses: { succeeded: 9, failed: 1 },
  stillActive: 0,
  effects: 9,
  executions: 12,
  reExecutedSuccesses: 2,
  notifications: 10,
  transitions: 40,
  externalCalls: 120,
  closestCallToExpiryMs: -2_400,
};
const input = {
  options: parseChaosArgs(['--quick', '--seed', '5']),
  seconds: 80.4,
  load: { keys: 10, doubleClicks: 1, admitted: 10, refused: 0, unanswered: 0, answers: { '2xx': 11 } },
  faults,
  faultErrors: {},
  sweepErrors: 0,
  apiAnswers: { '2xx': 14, '4xx': 1, '503': 3 },
  workerCrashes: 0,
  check,
  historyFile: '.chaos/x/history.json',
};

describe('chaos summary', () => {
  it('counts 503 (an outage) and 500 (an internal error) apart, both always shown', () => {
    const summary = summaryOf(input);
    expect(summary.apiAnswers).toEqual({ '2xx': 14, '4xx': 1, '503': 3, '500': 0 });
    expect(renderSummary(summary)).toContain('API answers: 503 (database unavailable) 3, 500 (internal error) 0;');
  });

  it('counts network partitions with the other faults, between the delayed heartbeats and the clock skews', () => {
    expect(FAULT_KINDS).toContain('network_partition');
    expect(FAULT_KINDS.indexOf('network_partition')).toBe(FAULT_KINDS.indexOf('delay_heartbeat') + 1);
    const summary = summaryOf(input);
    expect(summary.faults.network_partition).toBe(faults.network_partition);
    expect(JSON.parse(JSON.stringify(summary))).toMatchObject({ faults: { network_partition: faults.network_partition }, externalCalls: 120, closestCallToExpiryMs: -2_400 });
    expect(renderSummary(summary)).toMatch(new RegExp(`\\n  network_partition +${faults.network_partition}\\n`));
  });

  it('reports the new invariant by name, its violations, and how close the calls came to an expired lease', () => {
    const summary = summaryOf(input);
    expect(summary).toMatchObject({ violations: 1, violationsByInvariant: { noCallAfterLeaseEnd: 1 } });
    const text = renderSummary(summary);
    expect(text).toMatch(/\n +1 {2}no external call of an attempt arrives after its lease ended\n/);
    expect(text).toContain('external calls 120; of attempts whose lease expired, the latest call arrived 2400 ms after its lease ended');
    expect(text).toContain('- noCallAfterLeaseEnd op-1: 1 of 9 call(s) by c0a1');
    expect(renderSummary(summaryOf({ ...input, check: { ...check, violations: [], closestCallToExpiryMs: 1_020 } }))).toContain('arrived 1020 ms before its lease ended');
    expect(renderSummary(summaryOf({ ...input, check: { ...check, closestCallToExpiryMs: null } }))).toMatch(/\nexternal calls 120\n/);
  });
});
