import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FairnessResult, WindowFigures } from './fairness.js';
import type { Machine } from './machine.js';
import { escapeXml, fmt } from './report.js';
import { round } from './stats.js';

/** What `bench/results/fairness-*.json` holds: one fairness run and where it ran. */
export interface FairnessReport {
  readonly command: string;
  readonly startedAt: string;
  readonly machine: Machine;
  readonly fairness: FairnessResult;
}

/** The figures a script compares between fairness runs: the last line `npm run bench -- --fairness` prints (ms, 0..1). */
export interface FairnessHeadline {
  readonly lightP50BaselineMs: number;
  readonly lightP99BaselineMs: number;
  readonly lightP50FloodMs: number;
  readonly lightP99FloodMs: number;
  /** The A/B: light p99 under the flood with 4 invocations of batches of up to 10. */
  readonly lightP99FloodBatchesMs: number;
  readonly utilisation: number;
  readonly floodRunning: number;
  readonly floodHeld: number;
  readonly floodOpsPerSec: number;
  /** Every check passed and the run had no problems. */
  readonly ok: boolean;
}

/** The headline of a fairness run. */
export function fairnessHeadline(r: FairnessResult): FairnessHeadline {
  const flood = r.current.flood;
  return {
    lightP50BaselineMs: round(r.current.baseline?.lightWait.p50 ?? Number.NaN, 1),
    lightP99BaselineMs: round(r.current.baseline?.lightWait.p99 ?? Number.NaN, 1),
    lightP50FloodMs: round(flood.lightWait.p50, 1),
    lightP99FloodMs: round(flood.lightWait.p99, 1),
    lightP99FloodBatchesMs: round(r.batched.flood.lightWait.p99, 1),
    utilisation: round(flood.utilisation, 3),
    floodRunning: round(flood.floodRunning, 2),
    floodHeld: round(flood.floodHeld, 2),
    floodOpsPerSec: round(flood.floodOpsPerSec, 2),
    ok: r.problems.length === 0 && r.checks.every((c) => c.pass),
  };
}

/** The fairness run as Markdown (what the bench prints): settings, the figures per window, the A/B, the checks. */
export function renderFairnessTable(r: FairnessResult): string {
  const s = r.settings;
  const base = r.current.baseline;
  const flood = r.current.flood;
  const ab = r.batched.flood;
  const after = r.current.after;
  const wait = (w: WindowFigures) => `${fmt(w.lightWait.p50)} / ${fmt(w.lightWait.p99)} ms (${fmt(w.lightWait.count)} ops; max ${fmt(w.lightWait.max)})`;
  const cpu = (w: WindowFigures) => (w.cpu.machine === null ? 'n/a' : `${pct(w.cpu.machine)} (other processes ${pct(w.cpu.other ?? Number.NaN)})`);
  const cell = (w: WindowFigures | null, of: (w: WindowFigures) => string) => (w ? of(w) : 'n/a');
  const row = (name: string, of: (w: WindowFigures) => string) => `| ${name} | ${cell(base, of)} | ${of(flood)} | ${cell(after, of)} | ${of(ab)} |`;
  return [
    `Fairness (noisy neighbour) — ${s.lightOwners} light owners (${s.lightRunMs.min}–${s.lightRunMs.max} ms operations, one every ` +
      `${s.lightEveryMs.min / 1000}–${s.lightEveryMs.max / 1000} s each) and one flooding owner (${s.floodRunMs / 1000} s operations admitted at ` +
      `${fmt(s.floodPerSecond)}/s = ${fmt((s.floodPerSecond * s.floodRunMs) / (s.workers * 1000))} × what ${s.workers} workers run; admission limit ${fmt(s.floodAdmissionLimit)}, running limit ` +
      `${s.floodRunningLimit} = W − 1); ${s.warmupSeconds} s warm-up, windows of ${s.phaseSeconds} s (the flood's from ${s.rampSeconds} s after it starts; ` +
      `"after": ${s.afterSeconds} s from ${s.rampSeconds} s after the flood stops admitting, no sweeper running)`,
    '',
    `| figure | baseline: ${r.current.model.name} | flood: ${r.current.model.name} | after the flood stops admitting | flood: ${r.batched.model.name} (A/B) |`,
    '| --- | --- | --- | --- | --- |',
    row('light queue wait p50 / p99 (created_at → started_at, DB clock)', wait),
    row('flooding owner: completed / s; running on average (DB) / invocations held on average', (w) => `${fmt(w.floodOpsPerSec, 2)} / s; ${fmt(w.floodRunning, 2)} / ${fmt(w.floodHeld, 2)}`),
    row('light owners: invocations held on average', (w) => fmt(w.lightHeld, 2)),
    row('worker utilisation: busy invocation-time ÷ (invocations × wall)', (w) => pct(w.utilisation)),
    row('idle wake-ups (nothing claimable)', (w) => fmt(w.idleWakeups)),
    row('flood operations queued at the window\'s end', (w) => fmt(w.floodQueued)),
    row('CPU, whole machine', cpu),
    '',
    `Admitted: ${r.current.model.name} ${fmt(r.current.lightAdmitted)} light + ${fmt(r.current.floodAdmitted)} flood, ${fmt(r.current.wakeupsSent)} wake-ups; ` +
      `${r.batched.model.name} ${fmt(r.batched.lightAdmitted)} + ${fmt(r.batched.floodAdmitted)}, ${fmt(r.batched.wakeupsSent)} wake-ups.`,
    '',
    'Fairness checks (deployed model, measured in this run):',
    '',
    ...r.checks.map((c) => `${c.pass ? 'PASS' : 'FAIL'}  ${c.check}: ${c.value}`),
    ...(r.problems.length > 0 ? ['', 'PROBLEMS:', ...r.problems.map((p) => `- ${p}`)] : []),
  ].join('\n');
}

function pct(x: number): string {
  return Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : 'n/a';
}

/**
 * A hand-written SVG chart of the fairness run: the light owners' queue wait p50 / p99 (ms) at baseline, under the
 * flood, and under the flood with the batch model (A/B); beside it the workers' utilisation during the flood.
 */
export function renderFairnessSvg(r: FairnessResult, caption: string): string {
  const width = 720;
  const height = 380;
  const top = 60;
  const plot = 220;
  const axis = top + plot;
  const groups = [
    { label: 'baseline', w: r.current.baseline },
    { label: 'flood', w: r.current.flood },
    { label: 'flood, batches (A/B)', w: r.batched.flood },
  ];
  const max = Math.max(1, ...groups.flatMap((g) => (g.w ? [g.w.lightWait.p99] : [])).filter(Number.isFinite));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="250" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml("Light owners' queue wait, ms (lower is better)")}</text>`,
    `<rect x="170" y="34" width="10" height="10" fill="#90cdf4"/><text x="184" y="43">p50</text>`,
    `<rect x="230" y="34" width="10" height="10" fill="#2b6cb0"/><text x="244" y="43">p99</text>`,
    `<text x="610" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml('Utilisation (flood)')}</text>`,
    `<text x="610" y="43" text-anchor="middle" fill="#555555">${escapeXml('invocations × records each')}</text>`,
    `<line x1="30" y1="${axis}" x2="480" y2="${axis}" stroke="#333333"/>`,
    `<line x1="520" y1="${axis}" x2="700" y2="${axis}" stroke="#333333"/>`,
  ];
  const bar = (x: number, w: number, value: number, scale: number, color: string, label: string) => {
    const known = Number.isFinite(value);
    const h = known ? Math.max(1, (value / scale) * plot) : 0;
    parts.push(
      `<rect x="${x.toFixed(1)}" y="${(axis - h).toFixed(1)}" width="${w.toFixed(1)}" height="${h.toFixed(1)}" fill="${color}"/>`,
      `<text x="${(x + w / 2).toFixed(1)}" y="${(axis - h - 6).toFixed(1)}" text-anchor="middle">${escapeXml(known ? label : 'n/a')}</text>`,
    );
  };
  groups.forEach((g, i) => {
    const x = 40 + i * 150;
    bar(x + 10, 55, g.w?.lightWait.p50 ?? Number.NaN, max, '#90cdf4', fmt(g.w?.lightWait.p50 ?? Number.NaN));
    bar(x + 70, 55, g.w?.lightWait.p99 ?? Number.NaN, max, '#2b6cb0', fmt(g.w?.lightWait.p99 ?? Number.NaN));
    parts.push(`<text x="${x + 67.5}" y="${axis + 18}" text-anchor="middle">${escapeXml(g.label)}</text>`);
  });
  const utilisation = [
    { label: `${r.current.model.invocations} × 1`, value: r.current.flood.utilisation },
    { label: `${r.batched.model.invocations} × ≤ ${r.batched.model.batchSize}`, value: r.batched.flood.utilisation },
  ];
  utilisation.forEach((u, i) => {
    const x = 535 + i * 85;
    bar(x, 65, u.value, 1, i === 0 ? '#2b6cb0' : '#a0aec0', pct(u.value));
    parts.push(`<text x="${x + 32.5}" y="${axis + 18}" text-anchor="middle">${escapeXml(u.label)}</text>`);
  });
  const line = axis - 0.9 * plot;
  parts.push(
    `<line x1="520" y1="${line}" x2="700" y2="${line}" stroke="#c53030" stroke-dasharray="4 3"/>`,
    `<text x="516" y="${line + 4}" text-anchor="end" fill="#c53030">90 %</text>`,
    `<text x="${width / 2}" y="${height - 36}" text-anchor="middle" fill="#555555">${escapeXml(caption)}</text>`,
    `<text x="${width / 2}" y="${height - 18}" text-anchor="middle" fill="#555555">${escapeXml(`fairness checks: ${r.checks.filter((c) => c.pass).length} of ${r.checks.length} pass`)}</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}

/**
 * Writes `fairness-latest.json` / `.svg` (every fairness run) and `fairness-<mode>.json` / `.svg` (the last of its
 * mode; the README shows `fairness-full.svg`) into `dir`.
 */
export function writeFairnessResults(dir: string, mode: 'quick' | 'full', report: FairnessReport): string[] {
  const s = report.fairness.settings;
  const m = report.machine;
  const svg = renderFairnessSvg(
    report.fairness,
    `W = ${s.workers}; ${s.lightOwners} light owners + 1 flood at ${fmt(s.floodPerSecond)}/s, limit ${s.floodRunningLimit}; ${s.phaseSeconds} s windows; ` +
      `${m.cores} × ${m.cpuModel}; MariaDB ${m.mariadb.split('-')[0]}; ${report.startedAt.slice(0, 10)}`,
  );
  const json = `${JSON.stringify(report, null, 2)}\n`;
  const written: string[] = [];
  for (const name of ['fairness-latest', `fairness-${mode}`]) {
    writeFileSync(join(dir, `${name}.json`), json);
    writeFileSync(join(dir, `${name}.svg`), svg);
    written.push(`${name}.json`, `${name}.svg`);
  }
  return written;
}
