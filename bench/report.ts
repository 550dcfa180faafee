import type { BullmqResult } from './bullmq.js';
import type { CeilingResult } from './ceiling.js';
import type { CpuShare } from './cpu.js';
import type { DurableOpsResult } from './durable-ops.js';
import type { FairnessResult } from './fairness.js';
import type { FloorResult } from './floor.js';
import type { HistoryCostResult } from './history-cost.js';
import type { Machine } from './machine.js';
import type { PgBossResult } from './pg-boss.js';
import { ratio, round } from './stats.js';

/** How a run was sized. */
export interface BenchSettings {
  readonly mode: 'quick' | 'full';
  readonly ops: number;
  readonly owners: number;
  /** Admitters / producers, and workers (durable-ops, pg-boss) or the BullMQ worker's concurrency. */
  readonly concurrency: number;
  /**
   * Wake-up messages a durable-ops worker receives at most per invocation, handled concurrently (the worker Lambda's
   * SQS `batchSize`, `workerBatchSize` in serverless.yml, whose deployed default is 1 — README "Sizing the worker"; the
   * bench runs a batch-10 worker for the throughput comparison); pg-boss's counterpart is its fetch batch size.
   */
  readonly sqsBatchSize: number;
  readonly ceilingSeconds: number;
  readonly historyRows: { readonly small: number; readonly large: number };
  readonly historyRounds: number;
}

/** Everything one run produced: the JSON written to `bench/results/latest.json`. */
export interface BenchResults {
  readonly command: string;
  readonly startedAt: string;
  readonly seconds: number;
  readonly settings: BenchSettings;
  readonly machine: Machine;
  /** Wall-clock seconds of each phase. */
  readonly phaseSeconds: Readonly<Record<string, number>>;
  readonly ceiling: CeilingResult | null;
  readonly durableOps: DurableOpsResult | null;
  /** This design's statements on bare mysql2, same load (`bench/floor.ts`): the best the library could reach here. */
  readonly floor: FloorResult | null;
  readonly pgBoss: readonly PgBossResult[];
  readonly bullmq: BullmqResult | null;
  readonly historyCost: HistoryCostResult | null;
  /** The noisy-neighbour run's short form (`bench/fairness.ts`): `--quick` runs only; null when it failed. */
  readonly fairness?: FairnessResult | null;
  /** Phases that threw, with their error. */
  readonly failures: readonly string[];
  readonly headline: Headline;
  readonly targets: readonly TargetCheck[];
}

/** The figures a script compares between runs: the last line `npm run bench` prints. NaN (JSON null) when not measured. */
export interface Headline {
  readonly endToEndOpsPerSec: number;
  /** pg-boss's best of batch sizes 1 and 50. */
  readonly pgBossOpsPerSec: number;
  readonly pgBossBatch1OpsPerSec: number;
  readonly pgBossBatch50OpsPerSec: number;
  readonly bullmqOpsPerSec: number;
  readonly ceilingUpdatesPerSec: number;
  /** InnoDB read-write commits per durable-ops operation. */
  readonly commitsPerOp: number;
  /** Statements (round trips) the server received per durable-ops operation, `BEGIN`/`COMMIT` included. */
  readonly statementsPerOp: number;
  /** Raw UPDATE/s ÷ commits per operation: the operations/s the server could commit at best. */
  readonly ceilingOpsPerSec: number;
  readonly ratioToPgBoss: number;
  readonly ratioToCeiling: number;
  readonly bullmqRatio: number;
  /** The design floor's operations/s (see {@link BenchResults.floor}). */
  readonly floorOpsPerSec: number;
  /** Design floor ÷ pg-boss's best: what target 1a's ratio could at most be with this design on this machine. */
  readonly floorRatioToPgBoss: number;
  /** durable-ops ÷ the design floor: the share of the design's own speed the library keeps. */
  readonly ratioToFloor: number;
  readonly admissionP50Ms: number;
  readonly admissionP99Ms: number;
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  /** The worst of the claim, admission and sweeper cost ratios (large ÷ small history). */
  readonly historyCostRatio: number;
  /** The same ÷ the reference commit's ratio (the machine's own drift between the two measurements). */
  readonly historyCostRatioDriftCorrected: number;
  readonly historyRows: { readonly small: number; readonly large: number };
  /** Lost and doubly-executed work, summed over every system measured. */
  readonly lost: number;
  readonly doubleExecuted: number;
  /** Every phase ran and every check held. */
  readonly ok: boolean;
}

/** One performance target and whether this run met it (null: not measured, or not measurable here). */
export interface TargetCheck {
  readonly id: string;
  readonly target: string;
  readonly value: string;
  readonly pass: boolean | null;
}

/** A phase during which other processes used more than this share of the CPU is flagged as noisy. */
const NOISY_SHARE = 0.15;

/** Every problem a run found: failed phases, lost or duplicated work, failed checks, full scans. */
export function problemsOf(results: Pick<BenchResults, 'failures' | 'durableOps' | 'floor' | 'pgBoss' | 'bullmq' | 'historyCost' | 'fairness'>): string[] {
  return [
    ...results.failures,
    ...(results.durableOps?.problems ?? []).map((p) => `durable-ops: ${p}`),
    ...(results.floor?.problems ?? []).map((p) => `design floor: ${p}`),
    ...results.pgBoss.flatMap((r) => r.problems.map((p) => `pg-boss batch ${r.batchSize}: ${p}`)),
    ...(results.bullmq?.problems ?? []).map((p) => `BullMQ: ${p}`),
    ...(results.historyCost?.problems ?? []).map((p) => `history cost: ${p}`),
    ...(results.fairness?.problems ?? []).map((p) => `fairness: ${p}`),
  ];
}

/** The headline figures of a run's results. */
export function headlineOf(results: Pick<BenchResults, 'settings' | 'failures' | 'ceiling' | 'durableOps' | 'floor' | 'pgBoss' | 'bullmq' | 'historyCost' | 'fairness'>): Headline {
  const nan = Number.NaN;
  const d = results.durableOps;
  const batch = (size: number) => results.pgBoss.find((r) => r.batchSize === size)?.opsPerSec ?? nan;
  const measured = results.pgBoss.map((r) => r.opsPerSec).filter(Number.isFinite);
  const pgBossBest = measured.length > 0 ? Math.max(...measured) : nan;
  const endToEnd = d?.opsPerSec ?? nan;
  const commitsPerOp = d?.commits.perOp ?? nan;
  const ceilingUpdates = results.ceiling?.updatesPerSec ?? nan;
  const ceilingOps = ratio(ceilingUpdates, commitsPerOp);
  const bullmq = results.bullmq?.opsPerSec ?? nan;
  const floor = results.floor?.opsPerSec ?? nan;
  const lost = (d?.check.lost ?? 0) + (results.floor?.lost ?? 0) + results.pgBoss.reduce((n, r) => n + r.lost, 0) + (results.bullmq?.lost ?? 0);
  const doubleExecuted =
    (d?.check.doubleExecuted ?? 0) + (results.floor?.doubleExecuted ?? 0) + results.pgBoss.reduce((n, r) => n + r.doubleExecuted, 0) + (results.bullmq?.doubleExecuted ?? 0);
  return {
    endToEndOpsPerSec: round(endToEnd, 1),
    pgBossOpsPerSec: round(pgBossBest, 1),
    pgBossBatch1OpsPerSec: round(batch(1), 1),
    pgBossBatch50OpsPerSec: round(batch(50), 1),
    bullmqOpsPerSec: round(bullmq, 1),
    ceilingUpdatesPerSec: round(ceilingUpdates, 1),
    commitsPerOp: round(commitsPerOp, 3),
    statementsPerOp: round(d?.commits.statementsPerOp ?? nan, 2),
    ceilingOpsPerSec: round(ceilingOps, 1),
    ratioToPgBoss: round(ratio(endToEnd, pgBossBest), 3),
    ratioToCeiling: round(ratio(endToEnd, ceilingOps), 3),
    bullmqRatio: round(ratio(endToEnd, bullmq), 3),
    floorOpsPerSec: round(floor, 1),
    floorRatioToPgBoss: round(ratio(floor, pgBossBest), 3),
    ratioToFloor: round(ratio(endToEnd, floor), 3),
    admissionP50Ms: round(d?.admission.p50 ?? nan, 2),
    admissionP99Ms: round(d?.admission.p99 ?? nan, 2),
    claimP50Ms: round(d?.phases.claim.p50 ?? nan, 2),
    claimP99Ms: round(d?.phases.claim.p99 ?? nan, 2),
    historyCostRatio: round(results.historyCost?.historyCostRatio ?? nan, 3),
    historyCostRatioDriftCorrected: round(ratio(results.historyCost?.historyCostRatio ?? nan, results.historyCost?.drift ?? nan), 3),
    historyRows: results.settings.historyRows,
    lost,
    doubleExecuted,
    ok: problemsOf(results).length === 0,
  };
}

/** The performance targets against a run's headline. `readmeHasPerformance`: the README's Performance section exists. */
export function checkTargets(h: Headline, readmeHasPerformance: boolean): TargetCheck[] {
  const known = (...xs: number[]) => xs.every(Number.isFinite);
  const at = (pass: boolean, ...xs: number[]) => (known(...xs) ? pass : null);
  const full = h.historyRows.large >= 1_000_000;
  return [
    { id: '1a', target: 'end to end ≥ 2.0 × pg-boss best', value: `${fmt(h.ratioToPgBoss, 2)}×`, pass: at(h.ratioToPgBoss >= 2, h.ratioToPgBoss) },
    { id: '1b', target: 'end to end ≥ 0.5 × ceiling ÷ commits', value: `${fmt(h.ratioToCeiling, 2)}×`, pass: at(h.ratioToCeiling >= 0.5, h.ratioToCeiling) },
    { id: '1c', target: 'zero lost, zero double-executed', value: `${h.lost} lost, ${h.doubleExecuted} double`, pass: h.lost === 0 && h.doubleExecuted === 0 },
    { id: '2', target: 'claim p99 ≤ 25 ms (16 workers)', value: `${fmt(h.claimP99Ms, 1)} ms`, pass: at(h.claimP99Ms <= 25, h.claimP99Ms) },
    {
      id: '3',
      target: `cost at ${full ? '1,000,000' : `${fmt(h.historyRows.large, 0)} (quick; the target is 1,000,000)`} history rows ≤ 1.2 × at ${fmt(h.historyRows.small, 0)}`,
      value: `${fmt(h.historyCostRatio, 2)}×`,
      pass: at(h.historyCostRatio <= 1.2, h.historyCostRatio),
    },
    { id: '4', target: 'README has a Performance section', value: readmeHasPerformance ? 'present' : 'absent', pass: readmeHasPerformance },
  ];
}

/** A number for people: thousands separators, `digits` decimals, `n/a` for NaN. */
export function fmt(x: number, digits = 0): string {
  if (!Number.isFinite(x)) return 'n/a';
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** The results as Markdown tables (what `npm run bench` prints, and what the README's Performance section shows). */
export function renderTable(r: BenchResults): string {
  const h = r.headline;
  const d = r.durableOps;
  const m = r.machine;
  const lostRow = [
    d ? `durable-ops ${d.check.lost}/${d.check.doubleExecuted}` : 'durable-ops n/a',
    r.floor ? `design floor ${r.floor.lost}/${r.floor.doubleExecuted}` : 'design floor n/a',
    ...r.pgBoss.map((p) => `pg-boss b${p.batchSize} ${p.lost}/${p.doubleExecuted}`),
    r.bullmq ? `BullMQ ${r.bullmq.lost}/${r.bullmq.doubleExecuted}` : 'BullMQ n/a',
  ].join(', ');
  const hc = r.historyCost;
  const cpuOf = (name: string, c: { cpu: { benchMs: number; serverMs: number } } | null | undefined) =>
    c ? `${name} ${fmt(c.cpu.benchMs, 2)} / ${fmt(c.cpu.serverMs, 2)}` : `${name} n/a`;
  const cpuRow = [cpuOf('durable-ops', d), cpuOf('design floor', r.floor), ...r.pgBoss.map((p) => cpuOf(`pg-boss b${p.batchSize}`, p)), cpuOf('BullMQ', r.bullmq)].join(', ');
  const lines = [
    `durable-ops benchmark — ${r.settings.mode} run: N = ${fmt(r.settings.ops)} no-op operations, ${r.settings.owners} owners, ` +
      `${r.settings.concurrency} admitters + ${r.settings.concurrency} workers (durable-ops: SQS batches of up to ${r.settings.sqsBatchSize}); history ${fmt(r.settings.historyRows.small)} vs ${fmt(r.settings.historyRows.large)} rows`,
    `machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB; Node ${m.node}; MariaDB ${m.mariadb} (${m.mariadbSettings}); PostgreSQL ${m.postgresql}; Redis ${m.redis}`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| durable-ops end to end | **${fmt(h.endToEndOpsPerSec)} ops/s** (${d ? `${fmt(d.ops)} in ${fmt(d.seconds, 2)} s` : 'n/a'}) |`,
    `| admission p50 / p99 | ${fmt(h.admissionP50Ms, 1)} / ${fmt(h.admissionP99Ms, 1)} ms |`,
    `| claim p50 / p99 | ${fmt(h.claimP50Ms, 1)} / ${fmt(h.claimP99Ms, 1)} ms |`,
    `| commits per operation (InnoDB read-write commits) / statements per operation (round trips) | ${fmt(h.commitsPerOp, 2)} / ${fmt(h.statementsPerOp, 1)} |`,
    `| pg-boss 10 (PostgreSQL), batch 1 / batch 50 | ${fmt(h.pgBossBatch1OpsPerSec)} / ${fmt(h.pgBossBatch50OpsPerSec)} ops/s |`,
    `| BullMQ 6 (Redis, appendfsync always) | ${fmt(h.bullmqOpsPerSec)} ops/s |`,
    `| raw ceiling: committed single-row UPDATEs, 16 connections | ${fmt(h.ceilingUpdatesPerSec)} /s → ÷ ${fmt(h.commitsPerOp, 2)} commits = ${fmt(h.ceilingOpsPerSec)} ops/s |`,
    `| ratio to pg-boss (best) | ${fmt(h.ratioToPgBoss, 2)}× |`,
    `| ratio to BullMQ | ${fmt(h.bullmqRatio, 2)}× |`,
    `| ratio to ceiling | ${fmt(h.ratioToCeiling, 2)}× |`,
    `| design floor: the same statements on bare mysql2, groups of 32, no library code | ${fmt(h.floorOpsPerSec)} ops/s = ${fmt(h.floorRatioToPgBoss, 2)}× pg-boss best; ` +
      `durable-ops reaches ${fmt(h.ratioToFloor, 2)}× of it |`,
    hc
      ? `| history cost ${fmt(hc.large.historyRows)} ÷ ${fmt(hc.small.historyRows)} rows: claim / admission / sweep | ` +
        `${fmt(hc.ratios.claim, 2)}× / ${fmt(hc.ratios.admission, 2)}× / ${fmt(hc.ratios.sweep, 2)}× (worst ${fmt(h.historyCostRatio, 2)}×; ` +
        `÷ the machine's drift ${fmt(hc.drift, 2)}× = ${fmt(h.historyCostRatioDriftCorrected, 2)}×) |`
      : '| history cost | n/a |',
    `| lost / double-executed | ${lostRow} |`,
    `| CPU per operation, client process / server (ms) | ${cpuRow} |`,
  ];
  if (d) {
    const p = d.phases;
    lines.push(
      '',
      'Where a durable-ops operation\'s time goes (ms, p50 / p99):',
      '',
      '| admission | claim | claimed → handler | handler → completed | whole processWakeup |',
      '| --- | --- | --- | --- | --- |',
      `| ${fmt(d.admission.p50, 1)} / ${fmt(d.admission.p99, 1)} | ${fmt(p.claim.p50, 1)} / ${fmt(p.claim.p99, 1)} | ${fmt(p.prepare.p50, 2)} / ${fmt(p.prepare.p99, 2)} | ` +
        `${fmt(p.complete.p50, 1)} / ${fmt(p.complete.p99, 1)} | ${fmt(p.total.p50, 1)} / ${fmt(p.total.p99, 1)} |`,
      '',
      `durable-ops: ${fmt(d.commits.rwCommits)} read-write commits (${fmt(d.commits.comCommit)} explicit COMMITs) for ${fmt(d.ops)} operations; ` +
        `${fmt(d.wakeupsSent)} wake-ups sent; ${fmt(d.idleWakeups)} idle wake-ups; ${d.capacityRejections} capacity rejections; ` +
        `other clients busy in ${d.foreignActivity.busySamples} of ${d.foreignActivity.samples} samples.`,
    );
  }
  if (hc) {
    type Path = 'claim' | 'admission' | 'sweep';
    const row = (name: string, path: Path) =>
      `| ${name} | ${fmt(hc.small[path].p50, 2)} / ${fmt(hc.small[path].p99, 2)} | ${fmt(hc.large[path].p50, 2)} / ${fmt(hc.large[path].p99, 2)} | ` +
      `${fmt(hc.ratios[path], 2)}× | ${fmt(hc.small.diskReadsPerCall[path], 2)} → ${fmt(hc.large.diskReadsPerCall[path], 2)} |`;
    lines.push(
      '',
      `History cost (ms, p50 / p99 of ${fmt(hc.small.claim.count)} samples each; history loaded and written back in ${fmt(hc.small.fillSeconds, 1)} s and ${fmt(hc.large.fillSeconds, 1)} s):`,
      '',
      `| path | ${fmt(hc.small.historyRows)} rows | ${fmt(hc.large.historyRows)} rows | ratio of medians | pages read from disk per call |`,
      '| --- | --- | --- | --- | --- |',
      row('claim', 'claim'),
      row('admission', 'admission'),
      row('sweeper pass', 'sweep'),
      `| reference: one committed UPDATE of a 1-row table | ${fmt(hc.small.reference.p50, 2)} / ${fmt(hc.small.reference.p99, 2)} | ` +
        `${fmt(hc.large.reference.p50, 2)} / ${fmt(hc.large.reference.p99, 2)} | ${fmt(hc.drift, 2)}× (the machine's drift, not history's) | |`,

      '',
      `Statements whose median time grew most (ms, ${fmt(hc.small.historyRows)} → ${fmt(hc.large.historyRows)} rows; untimed profiling rounds):`,
      '',
      '| path | statement | before | after |',
      '| --- | --- | --- | --- |',
      ...hc.statements.slice(0, 8).map((t) => `| ${t.path} | \`${t.sql.slice(0, 90).replace(/\|/g, '\\|')}…\` | ${fmt(t.smallMs, 3)} | ${fmt(t.largeMs, 3)} |`),
      '',
      'Query plans at the large size (EXPLAIN of every statement the paths sent):',
      '',
      '| path | statement | table: access (key) |',
      '| --- | --- | --- |',
      ...hc.plans.map(
        (plan) =>
          `| ${plan.path}${plan.fullScans.length > 0 ? ' **FULL SCAN**' : ''} | \`${plan.sql.slice(0, 70).replace(/\|/g, '\\|')}…\` | ` +
          `${plan.plan.map(describePlanRow).join('; ')} |`,
      ),
    );
  }
  lines.push('', 'Performance targets (measured in this run):', '');
  for (const t of r.targets) lines.push(`${t.pass === null ? 'N/A ' : t.pass ? 'PASS' : 'MISS'}  ${t.id}. ${t.target}: ${t.value}`);
  lines.push('', `Phases (s): ${Object.entries(r.phaseSeconds).map(([name, s]) => `${name} ${fmt(s, 1)}`).join(', ')}; total ${fmt(r.seconds, 1)} s`);
  const windows: [string, CpuShare | undefined][] = [
    ['ceiling', r.ceiling?.cpu.share],
    ['durable-ops', d?.cpu.share],
    ['design floor', r.floor?.cpu.share],
    ...r.pgBoss.map((p): [string, CpuShare] => [`pg-boss batch ${p.batchSize}`, p.cpu.share]),
    ['BullMQ', r.bullmq?.cpu.share],
    [`history cost, ${fmt(r.settings.historyRows.small)} rows`, hc?.small.cpu],
    [`history cost, ${fmt(r.settings.historyRows.large)} rows`, hc?.large.cpu],
  ];
  lines.push('', `CPU during each timed window, as shares of all ${r.machine.cores} cores:`, '', '| window | bench process | MariaDB | PostgreSQL | Redis | anything else | machine |');
  lines.push('| --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, c] of windows) {
    if (!c) continue;
    lines.push(`| ${name} | ${pctOf(c.bench)} | ${pctOf(c.mariadb)} | ${pctOf(c.postgresql)} | ${pctOf(c.redis)} | ${pctOf(c.other)}${(c.other ?? 0) > NOISY_SHARE ? ' **noisy**' : ''} | ${pctOf(c.machine)} |`);
  }
  const noisy = windows.filter(([, c]) => (c?.other ?? 0) > NOISY_SHARE);
  if (noisy.length > 0) {
    lines.push('', `NOISY: other work on this machine took more than ${NOISY_SHARE * 100} % of the CPU during ${noisy.map(([name]) => name).join(', ')}; compare those figures with care.`);
  }
  const problems = problemsOf(r);
  if (problems.length > 0) lines.push('', 'PROBLEMS:', ...problems.map((p) => `- ${p}`));
  return lines.join('\n');
}

/** One EXPLAIN row for the report: `table: type (key), rows` or, without a table, MariaDB's note (e.g. no matching row). */
function describePlanRow(row: HistoryCostResult['plans'][number]['plan'][number]): string {
  if (row.table === null) return row.extra ?? '-';
  return `${row.table}: ${row.type ?? '-'} (${row.key ?? 'no key'}), ~${fmt(row.rows ?? Number.NaN)} rows${row.extra ? `, ${row.extra}` : ''}`;
}

function pctOf(x: number | null): string {
  return x === null ? 'n/a' : `${Math.round(x * 100)} %`;
}

/** Escapes text for SVG content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/**
 * A hand-written SVG bar chart of operations per second: durable-ops end to end, the design floor, pg-boss's best,
 * BullMQ, and the ceiling ÷ commits per operation. A bar that was not measured is drawn empty and labelled `n/a`.
 */
export function renderSvg(h: Headline, caption: string): string {
  const bars = [
    { label: 'durable-ops', value: h.endToEndOpsPerSec, color: '#2b6cb0' },
    { label: 'design floor', value: h.floorOpsPerSec, color: '#90cdf4' },
    { label: 'pg-boss (best)', value: h.pgBossOpsPerSec, color: '#718096' },
    { label: 'BullMQ (fsync always)', value: h.bullmqOpsPerSec, color: '#a0aec0' },
    { label: 'ceiling ÷ commits', value: h.ceilingOpsPerSec, color: '#cbd5e0' },
  ];
  const width = 640;
  const height = 360;
  const left = 60;
  const top = 50;
  const plotHeight = 230;
  const slot = (width - left - 20) / bars.length;
  const max = Math.max(1, ...bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml('Operations per second (higher is better)')}</text>`,
    `<line x1="${left}" y1="${top + plotHeight}" x2="${width - 20}" y2="${top + plotHeight}" stroke="#333333"/>`,
  ];
  bars.forEach((bar, i) => {
    const known = Number.isFinite(bar.value);
    const barHeight = known ? Math.max(1, (bar.value / max) * plotHeight) : 0;
    const x = left + i * slot + slot * 0.15;
    const y = top + plotHeight - barHeight;
    const w = slot * 0.7;
    parts.push(
      `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${barHeight.toFixed(1)}" fill="${bar.color}"/>`,
      `<text x="${(x + w / 2).toFixed(1)}" y="${(y - 6).toFixed(1)}" text-anchor="middle">${escapeXml(known ? fmt(bar.value) : 'n/a')}</text>`,
      `<text x="${(x + w / 2).toFixed(1)}" y="${top + plotHeight + 18}" text-anchor="middle">${escapeXml(bar.label)}</text>`,
    );
  });
  parts.push(`<text x="${width / 2}" y="${height - 16}" text-anchor="middle" fill="#555555">${escapeXml(caption)}</text>`, '</svg>');
  return `${parts.join('\n')}\n`;
}
