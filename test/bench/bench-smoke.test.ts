import { describe, expect, it } from 'vitest';
import { checkTargets, escapeXml, headlineOf, problemsOf, renderSvg, renderTable, type BenchResults } from '../../bench/report.js';
import { median, percentile, ratio, summarize } from '../../bench/stats.js';

// The harness's pure parts only: `npm run bench` itself needs MariaDB, PostgreSQL and Redis and takes minutes.

const latency = (p50: number, p99: number) => ({ count: 100, p50, p90: p99, p99, max: p99, mean: p50 });
const cpu = { bench: 0.2, mariadb: 0.3, postgresql: 0, redis: 0, other: 0.02, machine: 0.52 };
const cpuPerOp = { share: cpu, benchMs: 1.5, serverMs: 2 };

type Measured = Pick<BenchResults, 'settings' | 'failures' | 'ceiling' | 'durableOps' | 'floor' | 'pgBoss' | 'bullmq' | 'historyCost'>;

function fixture(overrides: Partial<Measured> = {}): BenchResults {
  const base = {
    settings: { mode: 'quick', ops: 2_000, owners: 100, concurrency: 16, sqsBatchSize: 10, ceilingSeconds: 3, historyRows: { small: 10_000, large: 100_000 }, historyRounds: 100 },
    failures: [],
    ceiling: { concurrency: 16, seconds: 3, updates: 60_000, updatesPerSec: 20_000, commitCounterPerUpdate: 1, cpu: cpuPerOp },
    durableOps: {
      ops: 2_000,
      seconds: 0.8,
      opsPerSec: 2_500,
      admission: latency(3, 12),
      phases: { claim: latency(2, 9), prepare: latency(0.1, 0.3), complete: latency(3, 11), total: latency(5, 20) },
      commits: { rwCommits: 6_000, comCommit: 6_000, perOp: 3, comCommitPerOp: 3, statementsPerOp: 14 },
      foreignActivity: { samples: 4, busySamples: 0 },
      cpu: cpuPerOp,
      wakeupsSent: 2_000,
      idleWakeups: 0,
      capacityRejections: 0,
      retriedErrors: 0,
      outcomes: { succeeded: 2_000 },
      check: { statuses: { succeeded: 2_000 }, notifications: 2_000, notifiedOperations: 2_000, heldCapacitySlots: 0, lost: 0, doubleExecuted: 0 },
      problems: [],
    },
    floor: { ops: 2_000, seconds: 0.5, opsPerSec: 4_000, commitsPerOp: 1.2, statementsPerOp: 9, cpu: cpuPerOp, retriedTransactions: 0, lost: 0, doubleExecuted: 0, problems: [] },
    pgBoss: [
      { batchSize: 1, ops: 2_000, seconds: 4, opsPerSec: 500, serverVersion: '15', cpu: cpuPerOp, completed: 2_000, lost: 0, doubleExecuted: 0, problems: [] },
      { batchSize: 50, ops: 2_000, seconds: 2, opsPerSec: 1_000, serverVersion: '15', cpu: cpuPerOp, completed: 2_000, lost: 0, doubleExecuted: 0, problems: [] },
    ],
    bullmq: { ops: 2_000, seconds: 0.5, opsPerSec: 4_000, previousPersistence: { appendonly: 'no', appendfsync: 'everysec' }, cpu: cpuPerOp, completed: 2_000, lost: 0, doubleExecuted: 0, problems: [] },
    historyCost: {
      small: { historyRows: 10_000, fillSeconds: 1, admission: latency(3, 8), claim: latency(1, 4), sweep: latency(5, 9), diskReadsPerCall: { admission: 0, claim: 0, sweep: 0 }, cpu, reference: latency(0.5, 1) },
      large: { historyRows: 100_000, fillSeconds: 9, admission: latency(3.3, 8), claim: latency(1, 4), sweep: latency(5.5, 9), diskReadsPerCall: { admission: 0.1, claim: 0, sweep: 0 }, cpu, reference: latency(0.5, 1) },
      ratios: { admission: 1.1, claim: 1, sweep: 1.1 },
      drift: 1,
      historyCostRatio: 1.1,
      plans: [{ path: 'claim', sql: 'select * from `operations` where `claim_lane` = ?', plan: [{ table: 'operations', type: 'ref', key: 'operations_claim_lane_idx', rows: 10, extra: 'Using where' }], fullScans: [] }],
      statements: [{ path: 'claim', sql: 'update `operations` set `status` = ?', count: 50, smallMs: 0.5, largeMs: 0.9 }],
      problems: [],
    },
  } as const satisfies Partial<BenchResults>;
  const partial: Measured = { ...base, ...overrides };
  const headline = headlineOf(partial);
  return {
    command: 'npm run bench -- --quick',
    startedAt: '2027-01-01T00:00:00.000Z',
    seconds: 60,
    machine: { cpuModel: 'Test CPU <x86>', cores: 2, memoryGiB: 8, node: 'v20.20.2', platform: 'linux x64', mariadb: '10.11', mariadbSettings: 'buffer pool 128 MiB', postgresql: '15', redis: '7' },
    phaseSeconds: { ceiling: 3 },
    ...partial,
    headline,
    targets: checkTargets(headline, false),
  };
}

/** A minimal XML well-formedness check: one root, every tag closed in order, quoted attributes, no stray `<` or `&`. */
function assertWellFormedXml(xml: string): void {
  const stack: string[] = [];
  let roots = 0;
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let last = 0;
  for (let m = token.exec(xml); m !== null; m = token.exec(xml)) {
    last = token.lastIndex;
    const [, closing, name, , selfClosing, text] = m;
    if (text !== undefined) {
      expect(text.replace(/&(amp|lt|gt|quot|apos);/g, ''), `stray & in ${text}`).not.toContain('&');
      if (stack.length === 0) expect(text.trim()).toBe('');
      continue;
    }
    if (closing) expect(stack.pop(), `closing </${name}>`).toBe(name);
    else if (!selfClosing) {
      if (stack.length === 0) roots++;
      stack.push(name as string);
    } else if (stack.length === 0) roots++;
  }
  expect(last, `unparseable at ${xml.slice(last, last + 40)}`).toBe(xml.length);
  expect(stack).toEqual([]);
  expect(roots).toBe(1);
}

describe('bench stats', () => {
  it('percentiles are nearest-rank: every figure is an observed sample', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(median([3, 1, 2])).toBe(2);
    expect(samples[0]).toBe(100); // not sorted in place
  });

  it('summaries of no samples are NaN, and bad percentiles are refused', () => {
    expect(Number.isNaN(percentile([], 50))).toBe(true);
    expect(summarize([]).count).toBe(0);
    expect(Number.isNaN(summarize([]).p99)).toBe(true);
    expect(() => percentile([1], 0)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
    const s = summarize([4, 1, 3, 2]);
    expect(s).toMatchObject({ count: 4, p50: 2, p99: 4, max: 4, mean: 2.5 });
  });

  it('a ratio with a missing side is NaN, never Infinity', () => {
    expect(ratio(10, 4)).toBe(2.5);
    expect(Number.isNaN(ratio(1, 0))).toBe(true);
    expect(Number.isNaN(ratio(Number.NaN, 2))).toBe(true);
  });
});

describe('bench report', () => {
  it('the last line carries every figure a script compares, as JSON', () => {
    const { headline } = fixture();
    const line = JSON.parse(JSON.stringify(headline)) as Record<string, unknown>;
    for (const key of [
      'endToEndOpsPerSec', 'pgBossOpsPerSec', 'bullmqOpsPerSec', 'ceilingOpsPerSec', 'ratioToPgBoss', 'ratioToCeiling',
      'admissionP99Ms', 'claimP99Ms', 'historyCostRatio', 'lost', 'doubleExecuted',
      'ceilingUpdatesPerSec', 'commitsPerOp', 'claimP50Ms', 'admissionP50Ms', 'bullmqRatio', 'historyCostRatioDriftCorrected',
      'floorOpsPerSec', 'floorRatioToPgBoss', 'ratioToFloor',
    ]) {
      expect(typeof line[key], key).toBe('number');
    }
    expect(line).toMatchObject({ endToEndOpsPerSec: 2_500, pgBossOpsPerSec: 1_000, ceilingOpsPerSec: 6_666.7, ratioToPgBoss: 2.5, ratioToCeiling: 0.375, lost: 0, ok: true });
    expect(line).toMatchObject({ floorOpsPerSec: 4_000, floorRatioToPgBoss: 4, ratioToFloor: 0.625 });
  });

  it('figures that were not measured are null in JSON, and a failed phase makes the run not ok', () => {
    const r = fixture({ durableOps: null, pgBoss: [], failures: ['durable-ops failed: boom'] });
    const line = JSON.parse(JSON.stringify(r.headline)) as Record<string, unknown>;
    expect(line.endToEndOpsPerSec).toBeNull();
    expect(line.ratioToPgBoss).toBeNull();
    expect(line.ok).toBe(false);
    expect(problemsOf(r)).toEqual(['durable-ops failed: boom']);
  });

  it('lost and doubly-executed work is summed over every system and fails the run', () => {
    const base = fixture();
    const r = fixture({ bullmq: { ...(base.bullmq as NonNullable<BenchResults['bullmq']>), lost: 2, doubleExecuted: 1, problems: ['2 jobs lost'] } });
    expect(r.headline).toMatchObject({ lost: 2, doubleExecuted: 1, ok: false });
    expect(r.targets.find((t) => t.id === '1b')?.pass).toBe(false);
    const floor = fixture({ floor: { ...(base.floor as NonNullable<BenchResults['floor']>), lost: 3, problems: ['3 operations not succeeded'] } });
    expect(floor.headline).toMatchObject({ lost: 3, ok: false });
    expect(problemsOf(floor)).toEqual(['design floor: 3 operations not succeeded']);
  });

  it('each target is PASS/MISS against its threshold, N/A when not measured', () => {
    const byId = Object.fromEntries(fixture().targets.map((t) => [t.id, t.pass]));
    // 2,500 ops/s = 2.5 × pg-boss's best (1a) but 0.63 × the floor (2); server CPU 1.0 × pg-boss's (3); 14 round trips (4);
    // history 1.1 × (6a); the open loop, owner growth, occupancy and capacity rows not in the fixture (N/A).
    expect(byId).toEqual({
      '1a': true,
      '1b': true,
      '2': false,
      '3': false,
      '4': false,
      '5a': null,
      '5b': null,
      '5c': null,
      '6a': true,
      '6b': null,
      '6c': null,
      '6d': null,
      '7': false,
    });
    const unmeasured = Object.fromEntries(fixture({ historyCost: null }).targets.map((t) => [t.id, t.pass]));
    expect(unmeasured['6a']).toBeNull();
  });

  it('the table shows the headline figures and every target', () => {
    const table = renderTable(fixture());
    expect(table).toContain('**2,500 ops/s**');
    expect(table).toContain('| ratio to pg-boss (best) | 2.50× |');
    expect(table).toContain('4,000 ops/s = 4.00× pg-boss best; durable-ops reaches 0.63× of it');
    expect(table).toMatch(/^PASS {2}1a\./m);
    expect(table).toMatch(/^MISS {2}7\./m);
  });

  it('the chart is well-formed SVG with one bar per system, text escaped', () => {
    const svg = renderSvg(fixture().headline, 'N = 2,000; Test CPU <x86> & co');
    assertWellFormedXml(svg);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<rect /g)).toHaveLength(7); // background + 6 bars
    expect(svg).toContain('Test CPU &lt;x86&gt; &amp; co');
    expect(escapeXml(`"'`)).toBe('&quot;&apos;');
  });

  it('an unmeasured bar is drawn empty and labelled n/a, still well-formed', () => {
    const svg = renderSvg(fixture({ bullmq: null }).headline, 'caption');
    assertWellFormedXml(svg);
    expect(svg).toContain('>n/a<');
  });
});
