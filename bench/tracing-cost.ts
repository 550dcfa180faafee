import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternate } from './alternate.js';
import type { Cleanups } from './cleanups.js';
import { benchDatabaseName, createBenchDatabase } from './mariadb.js';
import { median, ratio, round } from './stats.js';
import type { TracingArm, TracingArmInput, TracingArmResult } from './tracing-arm.js';

/** The arms, baseline first: tracing off, tracing to the JSON-lines file, the SDK with an exporter that writes nothing. */
export const TRACING_ARMS: readonly TracingArm[] = ['off', 'file', 'sdk'];

/** The variables that switch tracing on; removed from every arm's environment, then set again in the `file` arm only. */
const TRACING_VARIABLES = ['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'DURABLE_OPS_TRACE_FILE'];

/** Options of {@link runTracingCost}. */
export interface TracingCostOptions {
  readonly serverUrl: string;
  readonly ops: number;
  readonly owners: number;
  readonly admitters: number;
  readonly workers: number;
  readonly sqsBatchSize: number;
  /** Rounds of one run per arm, arms alternated (`alternate`). */
  readonly rounds: number;
  /** Most time one arm's timed window may take, in ms. */
  readonly timeoutMs: number;
  /** Where dropping an arm's database is registered while it exists. */
  readonly cleanups: Cleanups;
}

/** One arm over every round: medians of the per-round figures. */
export interface TracingArmSummary {
  readonly arm: TracingArm;
  readonly opsPerSec: number;
  /** Median over the rounds of each round's median admission latency, in ms. */
  readonly admissionP50Ms: number;
  /** Median over the rounds of each round's 99th-percentile admission latency, in ms. */
  readonly admissionP99Ms: number;
  readonly cpuMsPerOp: number;
  /** Spans per operation in the median round (0 when tracing is off). */
  readonly spansPerOp: number;
}

/** An arm compared with `off`, measured in the same run. */
export interface TracingRatio {
  readonly arm: TracingArm;
  /** Median ops/s of the arm ÷ median ops/s of `off` (below 1: tracing costs throughput). */
  readonly opsPerSec: number;
  /** The median, over rounds, of that round's ops/s ratio (arm ÷ `off`, both from the same round). */
  readonly opsPerSecPaired: number;
  /** Median admission p50 of the arm ÷ that of `off` (above 1: admission got slower). */
  readonly admissionP50: number;
  /** Median CPU per operation of the arm ÷ that of `off` (above 1: more CPU per operation). */
  readonly cpuPerOp: number;
}

/** What {@link runTracingCost} measured. */
export interface TracingCostResult {
  readonly ops: number;
  readonly rounds: number;
  /** The order the arms ran in, round by round. */
  readonly order: readonly (readonly TracingArm[])[];
  readonly runs: readonly TracingArmResult[];
  readonly arms: readonly TracingArmSummary[];
  readonly ratios: readonly TracingRatio[];
  /** Problems of any run, and spans the traced arms should have recorded but did not. */
  readonly problems: readonly string[];
}

/** The spans one operation must produce on this path, each at least once (README "Tracing"). */
const SPANS_PER_OPERATION = ['POST /api/operations', 'admission', 'wakeup publish', 'wakeup process', 'claim', 'attempt', 'completion'];

/**
 * The cost of tracing on the hot path: `ops` no-op operations admitted through the API handler and run to `succeeded`
 * through the worker handler (`HandlerPathRig`, every span of an operation on the way), once per arm per round, each
 * run in a child process of its own (`bench/tracing-arm.ts`) on a database of its own, the arms alternated
 * (`alternate`: off file sdk, sdk file off, …) so the machine's drift falls on every arm alike. The `file` arm writes
 * to a temporary file, removed afterwards. A traced arm whose spans miss one of {@link SPANS_PER_OPERATION} for some
 * operation, or whose consumer spans are not children of publish spans, is a problem: then it did not measure tracing.
 */
export async function runTracingCost(options: TracingCostOptions): Promise<TracingCostResult> {
  const runs: TracingArmResult[] = [];
  const order: TracingArm[][] = [];
  await alternate(options.rounds, TRACING_ARMS, async (arm, roundIndex) => {
    (order[roundIndex] ??= []).push(arm);
    const database = await createBenchDatabase(options.serverUrl, benchDatabaseName(`tracing${roundIndex}${arm}`));
    options.cleanups.set(`database ${database.name}`, () => database.drop());
    const traceFile = join(tmpdir(), `durable-ops-bench-${process.pid}-${roundIndex}-${arm}.jsonl`);
    try {
      const input: TracingArmInput = { arm, databaseUrl: database.url, ...pick(options) };
      console.error(`[bench] tracing round ${roundIndex + 1}/${options.rounds}: ${arm}…`);
      runs.push(await runChild(input, arm === 'file' ? traceFile : undefined, options.timeoutMs + 60_000));
    } finally {
      await database.drop();
      options.cleanups.delete(`database ${database.name}`);
      await rm(traceFile, { force: true });
    }
  });
  const problems = runs.flatMap((run, i) => [...run.problems, ...spanProblems(run)].map((p) => `${run.arm} run ${i + 1}: ${p}`));
  const arms = TRACING_ARMS.map((arm) => summarizeArm(arm, runs.filter((r) => r.arm === arm)));
  const baseline = arms[0] as TracingArmSummary;
  const ratios = arms.slice(1).map((a) => ({
    arm: a.arm,
    opsPerSec: ratio(a.opsPerSec, baseline.opsPerSec),
    opsPerSecPaired: median(
      Array.from({ length: options.rounds }, (_, r) => ratio(runOf(runs, order, r, a.arm)?.opsPerSec ?? Number.NaN, runOf(runs, order, r, 'off')?.opsPerSec ?? Number.NaN)),
    ),
    admissionP50: ratio(a.admissionP50Ms, baseline.admissionP50Ms),
    cpuPerOp: ratio(a.cpuMsPerOp, baseline.cpuMsPerOp),
  }));
  return { ops: options.ops, rounds: options.rounds, order, runs, arms, ratios, problems };
}

function pick(o: TracingCostOptions): Omit<TracingArmInput, 'arm' | 'databaseUrl'> {
  return { ops: o.ops, owners: o.owners, admitters: o.admitters, workers: o.workers, sqsBatchSize: o.sqsBatchSize, timeoutMs: o.timeoutMs };
}

/** The run of `arm` in round `r` (runs are stored in the order they ran). */
function runOf(runs: readonly TracingArmResult[], order: readonly (readonly TracingArm[])[], r: number, arm: TracingArm): TracingArmResult | undefined {
  const before = order.slice(0, r).reduce((n, arms) => n + arms.length, 0);
  const at = order[r]?.indexOf(arm) ?? -1;
  return at < 0 ? undefined : runs[before + at];
}

function spanProblems(run: TracingArmResult): string[] {
  const total = Object.values(run.spans).reduce((n, c) => n + c, 0);
  if (run.arm === 'off') return total > 0 ? [`${total} spans recorded with tracing off`] : [];
  const missing = SPANS_PER_OPERATION.filter((name) => (run.spans[name] ?? 0) < run.ops).map((name) => `${run.spans[name] ?? 0} '${name}' spans for ${run.ops} operations`);
  const unlinked = run.linkedConsumerSpans < run.ops ? [`only ${run.linkedConsumerSpans} 'wakeup process' spans are children of a 'wakeup publish' span`] : [];
  return [...missing, ...unlinked];
}

function summarizeArm(arm: TracingArm, runs: readonly TracingArmResult[]): TracingArmSummary {
  const spansPerOp = runs.map((r) => Object.values(r.spans).reduce((n, c) => n + c, 0) / r.ops);
  return {
    arm,
    opsPerSec: median(runs.map((r) => r.opsPerSec)),
    admissionP50Ms: median(runs.map((r) => r.admission.p50)),
    admissionP99Ms: median(runs.map((r) => r.admission.p99)),
    cpuMsPerOp: median(runs.map((r) => r.cpuMsPerOp)),
    spansPerOp: median(spansPerOp),
  };
}

/**
 * Runs one arm: `node --import tsx bench/tracing-arm.ts <input>` with the tracing variables removed from the
 * environment and, for the `file` arm, `DURABLE_OPS_TRACE_FILE=<traceFile>`; stderr passes through.
 * @throws {Error} when the child exits non-zero, prints no result line, or outlives `killAfterMs` (it is killed).
 */
function runChild(input: TracingArmInput, traceFile: string | undefined, killAfterMs: number): Promise<TracingArmResult> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of TRACING_VARIABLES) delete env[name];
  if (traceFile) env.DURABLE_OPS_TRACE_FILE = traceFile;
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', 'tracing-arm.ts'), JSON.stringify(input)], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) reject(new Error(`tracing arm ${input.arm} exited with ${signal ?? code}`));
      else resolve(JSON.parse(last) as TracingArmResult);
    });
  });
}

/** The report of a {@link TracingCostResult}: per arm medians, then the ratios against `off` measured in this run. */
export function renderTracingTable(result: TracingCostResult): string {
  const pad = (s: string, n: number) => s.padEnd(n);
  const lines = [
    `Tracing cost: N = ${result.ops.toLocaleString('en-US')} operations per run through the API and worker handlers, ${result.rounds} rounds, arms alternated, each run in its own process`,
    '',
    `${pad('arm', 6)}${pad('ops/s (median)', 16)}${pad('admission p50 ms', 18)}${pad('admission p99 ms', 18)}${pad('CPU ms/op', 11)}spans/op`,
    ...result.arms.map(
      (a) =>
        `${pad(a.arm, 6)}${pad(round(a.opsPerSec, 1).toString(), 16)}${pad(round(a.admissionP50Ms, 2).toString(), 18)}${pad(round(a.admissionP99Ms, 2).toString(), 18)}${pad(round(a.cpuMsPerOp, 3).toString(), 11)}${round(a.spansPerOp, 2)}`,
    ),
    '',
    'Ratios against off, measured in this run (ops/s below 1 and the others above 1 mean tracing costs):',
    ...result.ratios.map(
      (r) =>
        `  ${pad(`${r.arm}/off`, 9)}ops/s ${round(r.opsPerSec, 3)} (paired by round: ${round(r.opsPerSecPaired, 3)}), admission p50 ${round(r.admissionP50, 3)}, CPU/op ${round(r.cpuPerOp, 3)}`,
    ),
    '',
    'Per run (in the order they ran):',
    ...result.order.map((arms, r) => `  round ${r + 1}: ${arms.map((arm) => `${arm} ${round(runOf(result.runs, result.order, r, arm)?.opsPerSec ?? Number.NaN, 1)} ops/s`).join(', ')}`),
    '',
    'Absolute figures are noisy on a shared machine; the ratios are fair because every arm ran in every round, alternated.',
  ];
  if (result.problems.length > 0) lines.push('', 'PROBLEMS:', ...result.problems.map((p) => `  - ${p}`));
  return lines.join('\n');
}
