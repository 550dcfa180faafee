import type { CostComparison } from './alternate.js';
import type { BullmqResult } from './bullmq.js';
import type { CeilingResult } from './ceiling.js';
import type { CpuShare } from './cpu.js';
import type { DurableOpsResult } from './durable-ops.js';
import type { FairnessResult } from './fairness.js';
import type { FloorResult } from './floor.js';
import type { GraphileWorkerMode, GraphileWorkerResult } from './graphile-worker.js';
import type { HistoryCostResult } from './history-cost.js';
import type { Machine } from './machine.js';
import type { OccupancyResult } from './occupancy.js';
import type { OpenLoopResult } from './open-loop.js';
import type { OwnerGrowthResult } from './owner-growth.js';
import type { PgBossResult } from './pg-boss.js';
import { ratio, round, type LatencySummary } from './stats.js';

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
  /** graphile-worker plain and batched (`bench/graphile-worker.ts`); absent from results written before it was measured. */
  readonly graphileWorker?: readonly GraphileWorkerResult[];
  readonly bullmq: BullmqResult | null;
  readonly historyCost: HistoryCostResult | null;
  /** The noisy-neighbour run's short form (`bench/fairness.ts`): `--quick` runs only; null when it failed. */
  readonly fairness?: FairnessResult | null;
  /**
   * Latency at half the durable-ops phase's throughput, open loop (`bench/open-loop.ts`); null when it failed or had no
   * throughput to start from; absent from results written before it was measured.
   */
  readonly openLoop?: OpenLoopResult | null;
  /** Admission and claim cost with many owners vs few, and the per-owner capacity state (`bench/owner-growth.ts`). */
  readonly ownerGrowth?: OwnerGrowthResult | null;
  /** Admission cost with the global pool 90 % held vs empty (`bench/occupancy.ts`). */
  readonly occupancy?: OccupancyResult | null;
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
  /** graphile-worker's best of its plain and batched modes. */
  readonly graphileOpsPerSec: number;
  readonly graphilePlainOpsPerSec: number;
  readonly graphileBatchedOpsPerSec: number;
  /** The best PostgreSQL peer: pg-boss at either batch size or graphile-worker in either mode. */
  readonly bestPeerOpsPerSec: number;
  /** durable-ops ÷ {@link Headline.bestPeerOpsPerSec} (target 1a). */
  readonly ratioToBestPeer: number;
  /** MariaDB's CPU per durable-ops operation over its timed window, in ms. */
  readonly serverCpuMsPerOp: number;
  /** PostgreSQL's CPU per pg-boss job, in ms: the lower of its batch sizes' figures (pg-boss at its most frugal). */
  readonly pgBossServerCpuMsPerOp: number;
  /** PostgreSQL's CPU per graphile-worker job, in ms: the lower of its two modes' figures. */
  readonly graphileServerCpuMsPerOp: number;
  /** {@link Headline.serverCpuMsPerOp} ÷ {@link Headline.pgBossServerCpuMsPerOp} (target 1d). */
  readonly serverCpuRatioToPgBoss: number;
  /** Round trips to the database server per durable-ops operation: {@link Headline.statementsPerOp} (target 1e). */
  readonly roundTripsPerOp: number;
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
  /** Design floor ÷ pg-boss's best: what the ratio to pg-boss could at most be with this design on this machine. */
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
  /**
   * Open-loop latency at half saturation, in ms (p50 and p99): scheduled arrival → `admitOperation` returned
   * (admission), wake-up sent → claim committed (claim), scheduled arrival → succeeded (end to end); the arrival rate
   * per second.
   */
  readonly openLoop: {
    readonly admissionP50Ms: number;
    readonly admissionP99Ms: number;
    readonly claimP50Ms: number;
    readonly claimP99Ms: number;
    readonly endToEndP50Ms: number;
    readonly endToEndP99Ms: number;
    readonly ratePerSec: number;
  };
  /** Admission or claim cost (mean per call, the worse) with {@link Headline.ownerGrowthOwners} owners ÷ with 100. */
  readonly ownerGrowthRatio: number;
  /** Owners of the owner-growth phase's large arm (100,000; quick: 10,000). */
  readonly ownerGrowthOwners: number;
  /** Bytes (data + indexes) of `capacity_slots`, `owner_capacity`, `owner_turns` and `admission_buckets` per owner. */
  readonly capacityBytesPerOwner: number;
  /** Rows of those four tables per owner per task type. */
  readonly capacityRowsPerOwnerPerTaskType: number;
  /** Rows that belong to an owner (the shared global and route pools' slot rows left out) per owner per task type: target 6d. */
  readonly capacityOwnerRowsPerOwnerPerTaskType: number;
  /** Admission cost (mean per call) with the task type's global pool 90 % held ÷ with it empty. */
  readonly occupancyCostRatio: number;
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
export function problemsOf(
  results: Pick<BenchResults, 'failures' | 'durableOps' | 'floor' | 'pgBoss' | 'graphileWorker' | 'bullmq' | 'historyCost' | 'fairness' | 'openLoop' | 'ownerGrowth' | 'occupancy'>,
): string[] {
  return [
    ...results.failures,
    ...(results.durableOps?.problems ?? []).map((p) => `durable-ops: ${p}`),
    ...(results.floor?.problems ?? []).map((p) => `design floor: ${p}`),
    ...results.pgBoss.flatMap((r) => r.problems.map((p) => `pg-boss batch ${r.batchSize}: ${p}`)),
    ...(results.graphileWorker ?? []).flatMap((r) => r.problems.map((p) => `graphile-worker ${r.mode}: ${p}`)),
    ...(results.bullmq?.problems ?? []).map((p) => `BullMQ: ${p}`),
    ...(results.historyCost?.problems ?? []).map((p) => `history cost: ${p}`),
    ...(results.fairness?.problems ?? []).map((p) => `fairness: ${p}`),
    ...(results.openLoop?.problems ?? []).map((p) => `open loop: ${p}`),
    ...(results.ownerGrowth?.problems ?? []).map((p) => `owner growth: ${p}`),
    ...(results.occupancy?.problems ?? []).map((p) => `occupancy: ${p}`),
  ];
}

/** The largest finite value of `xs`; NaN when none is finite (nothing measured). */
function maxOf(xs: readonly number[]): number {
  const finite = xs.filter(Number.isFinite);
  return finite.length > 0 ? Math.max(...finite) : Number.NaN;
}

/** The smallest finite value of `xs`; NaN when none is finite (nothing measured). */
function minOf(xs: readonly number[]): number {
  const finite = xs.filter(Number.isFinite);
  return finite.length > 0 ? Math.min(...finite) : Number.NaN;
}

/** The headline figures of a run's results. */
export function headlineOf(
  results: Pick<
    BenchResults,
    'settings' | 'failures' | 'ceiling' | 'durableOps' | 'floor' | 'pgBoss' | 'graphileWorker' | 'bullmq' | 'historyCost' | 'fairness' | 'openLoop' | 'ownerGrowth' | 'occupancy'
  >,
): Headline {
  const nan = Number.NaN;
  const d = results.durableOps;
  const batch = (size: number) => results.pgBoss.find((r) => r.batchSize === size)?.opsPerSec ?? nan;
  const pgBossBest = maxOf(results.pgBoss.map((r) => r.opsPerSec));
  const graphile = results.graphileWorker ?? [];
  const graphileMode = (mode: GraphileWorkerMode) => graphile.find((r) => r.mode === mode)?.opsPerSec ?? nan;
  const graphileBest = maxOf(graphile.map((r) => r.opsPerSec));
  const bestPeer = maxOf([pgBossBest, graphileBest]);
  const serverCpu = d?.cpu.serverMs ?? nan;
  const pgBossServerCpu = minOf(results.pgBoss.map((r) => r.cpu.serverMs));
  const statementsPerOp = d?.commits.statementsPerOp ?? nan;
  const endToEnd = d?.opsPerSec ?? nan;
  const commitsPerOp = d?.commits.perOp ?? nan;
  const ceilingUpdates = results.ceiling?.updatesPerSec ?? nan;
  const ceilingOps = ratio(ceilingUpdates, commitsPerOp);
  const bullmq = results.bullmq?.opsPerSec ?? nan;
  const floor = results.floor?.opsPerSec ?? nan;
  const peers = [...results.pgBoss, ...graphile];
  const ol = results.openLoop;
  const lost = (d?.check.lost ?? 0) + (ol?.check.lost ?? 0) + (results.floor?.lost ?? 0) + peers.reduce((n, r) => n + r.lost, 0) + (results.bullmq?.lost ?? 0);
  const doubleExecuted =
    (d?.check.doubleExecuted ?? 0) +
    (ol?.check.doubleExecuted ?? 0) +
    (results.floor?.doubleExecuted ?? 0) +
    peers.reduce((n, r) => n + r.doubleExecuted, 0) +
    (results.bullmq?.doubleExecuted ?? 0);
  const og = results.ownerGrowth;
  return {
    endToEndOpsPerSec: round(endToEnd, 1),
    pgBossOpsPerSec: round(pgBossBest, 1),
    pgBossBatch1OpsPerSec: round(batch(1), 1),
    pgBossBatch50OpsPerSec: round(batch(50), 1),
    graphileOpsPerSec: round(graphileBest, 1),
    graphilePlainOpsPerSec: round(graphileMode('plain'), 1),
    graphileBatchedOpsPerSec: round(graphileMode('batched'), 1),
    bestPeerOpsPerSec: round(bestPeer, 1),
    ratioToBestPeer: round(ratio(endToEnd, bestPeer), 3),
    serverCpuMsPerOp: round(serverCpu, 3),
    pgBossServerCpuMsPerOp: round(pgBossServerCpu, 3),
    graphileServerCpuMsPerOp: round(minOf(graphile.map((r) => r.cpu.serverMs)), 3),
    serverCpuRatioToPgBoss: round(ratio(serverCpu, pgBossServerCpu), 3),
    roundTripsPerOp: round(statementsPerOp, 2),
    bullmqOpsPerSec: round(bullmq, 1),
    ceilingUpdatesPerSec: round(ceilingUpdates, 1),
    commitsPerOp: round(commitsPerOp, 3),
    statementsPerOp: round(statementsPerOp, 2),
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
    openLoop: {
      admissionP50Ms: round(ol?.admission.p50 ?? nan, 2),
      admissionP99Ms: round(ol?.admission.p99 ?? nan, 2),
      claimP50Ms: round(ol?.claim.p50 ?? nan, 2),
      claimP99Ms: round(ol?.claim.p99 ?? nan, 2),
      endToEndP50Ms: round(ol?.endToEnd.p50 ?? nan, 2),
      endToEndP99Ms: round(ol?.endToEnd.p99 ?? nan, 2),
      ratePerSec: round(ol?.ratePerSec ?? nan, 1),
    },
    ownerGrowthRatio: round(og?.ownerGrowthRatio ?? nan, 3),
    ownerGrowthOwners: og?.large.owners ?? nan,
    capacityBytesPerOwner: round(og?.footprint.bytesPerOwner ?? nan, 0),
    capacityRowsPerOwnerPerTaskType: round(og?.footprint.rowsPerOwnerPerTaskType ?? nan, 2),
    capacityOwnerRowsPerOwnerPerTaskType: round(og?.footprint.ownerRowsPerOwnerPerTaskType ?? nan, 2),
    occupancyCostRatio: round(results.occupancy?.occupancyCostRatio ?? nan, 3),
    lost,
    doubleExecuted,
    ok: problemsOf(results).length === 0,
  };
}

/** The performance targets against a run's headline (numbered as in the README's Performance section). `readmeHasPerformance`: the README's Performance section exists. */
export function checkTargets(h: Headline, readmeHasPerformance: boolean): TargetCheck[] {
  const known = (...xs: number[]) => xs.every(Number.isFinite);
  const at = (pass: boolean, ...xs: number[]) => (known(...xs) ? pass : null);
  const full = h.historyRows.large >= 1_000_000;
  const targets: TargetCheck[] = [
    {
      id: '1a',
      target: 'end to end ≥ 2.0 × best PostgreSQL peer (pg-boss, graphile-worker)',
      value: `${fmt(h.ratioToBestPeer, 2)}×`,
      pass: at(h.ratioToBestPeer >= 2, h.ratioToBestPeer),
    },
    { id: '2', target: 'end to end ≥ 0.85 × design floor', value: `${fmt(h.ratioToFloor, 2)}×`, pass: at(h.ratioToFloor >= 0.85, h.ratioToFloor) },
    { id: '1b', target: 'zero lost, zero double-executed', value: `${h.lost} lost, ${h.doubleExecuted} double`, pass: h.lost === 0 && h.doubleExecuted === 0 },
    {
      id: '3',
      target: "server CPU per operation ≤ 0.5 × pg-boss's",
      value: `${fmt(h.serverCpuMsPerOp, 2)} ms vs ${fmt(h.pgBossServerCpuMsPerOp, 2)} ms = ${fmt(h.serverCpuRatioToPgBoss, 2)}×`,
      pass: at(h.serverCpuRatioToPgBoss <= 0.5, h.serverCpuRatioToPgBoss),
    },
    { id: '4', target: 'round trips per operation ≤ 3.0', value: fmt(h.roundTripsPerOp, 1), pass: at(h.roundTripsPerOp <= 3, h.roundTripsPerOp) },
    {
      id: '6a',
      target: `cost at ${full ? '1,000,000' : `${fmt(h.historyRows.large, 0)} (quick; the target is 1,000,000)`} history rows ≤ 1.2 × at ${fmt(h.historyRows.small, 0)}`,
      value: `${fmt(h.historyCostRatio, 2)}×`,
      pass: at(h.historyCostRatio <= 1.2, h.historyCostRatio),
    },
    { id: '7', target: 'README has a Performance section', value: readmeHasPerformance ? 'present' : 'absent', pass: readmeHasPerformance },
    {
      id: '5a',
      target: 'at 50 % of saturation (open loop): admission p99 ≤ 10 ms',
      value: `${fmt(h.openLoop.admissionP99Ms, 1)} ms at ${fmt(h.openLoop.ratePerSec)}/s`,
      pass: at(h.openLoop.admissionP99Ms <= 10, h.openLoop.admissionP99Ms),
    },
    { id: '5b', target: 'at 50 % of saturation: wake-up → running p99 ≤ 15 ms', value: `${fmt(h.openLoop.claimP99Ms, 1)} ms`, pass: at(h.openLoop.claimP99Ms <= 15, h.openLoop.claimP99Ms) },
    {
      id: '5c',
      target: 'at 50 % of saturation: admit → succeeded p99 ≤ 50 ms',
      value: `${fmt(h.openLoop.endToEndP99Ms, 1)} ms`,
      pass: at(h.openLoop.endToEndP99Ms <= 50, h.openLoop.endToEndP99Ms),
    },
    {
      id: '6b',
      target: `admission and claim cost with ${h.ownerGrowthOwners >= 100_000 ? '100,000' : `${fmt(h.ownerGrowthOwners)} (quick; the target is 100,000)`} owners ≤ 1.2 × with 100`,
      value: `${fmt(h.ownerGrowthRatio, 2)}×`,
      pass: at(h.ownerGrowthRatio <= 1.2, h.ownerGrowthRatio),
    },
    {
      id: '6c',
      target: 'admission cost with the global pool 90 % held ≤ 1.2 × with it empty',
      value: `${fmt(h.occupancyCostRatio, 2)}×`,
      pass: at(h.occupancyCostRatio <= 1.2, h.occupancyCostRatio),
    },
    {
      id: '6d',
      target: 'capacity rows per owner per task type ≤ 1',
      value:
        `${fmt(h.capacityOwnerRowsPerOwnerPerTaskType, 2)} of the owner's own (${fmt(h.capacityRowsPerOwnerPerTaskType, 2)} with the shared pools' rows spread ` +
        `over the owners; ${fmt(h.capacityBytesPerOwner)} bytes per owner)`,
      pass: at(h.capacityOwnerRowsPerOwnerPerTaskType <= 1, h.capacityOwnerRowsPerOwnerPerTaskType),
    },
  ];
  return targets.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
    r.openLoop ? `durable-ops open loop ${r.openLoop.check.lost}/${r.openLoop.check.doubleExecuted}` : 'durable-ops open loop n/a',
    r.floor ? `design floor ${r.floor.lost}/${r.floor.doubleExecuted}` : 'design floor n/a',
    ...r.pgBoss.map((p) => `pg-boss b${p.batchSize} ${p.lost}/${p.doubleExecuted}`),
    ...(r.graphileWorker ?? []).map((g) => `graphile-worker ${g.mode} ${g.lost}/${g.doubleExecuted}`),
    r.bullmq ? `BullMQ ${r.bullmq.lost}/${r.bullmq.doubleExecuted}` : 'BullMQ n/a',
  ].join(', ');
  const hc = r.historyCost;
  const ol = r.openLoop;
  const og = r.ownerGrowth;
  const oc = r.occupancy;
  const cpuOf = (name: string, c: { cpu: { benchMs: number; serverMs: number } } | null | undefined) =>
    c ? `${name} ${fmt(c.cpu.benchMs, 2)} / ${fmt(c.cpu.serverMs, 2)}` : `${name} n/a`;
  const cpuRow = [
    cpuOf('durable-ops', d),
    cpuOf('design floor', r.floor),
    ...r.pgBoss.map((p) => cpuOf(`pg-boss b${p.batchSize}`, p)),
    ...(r.graphileWorker ?? []).map((g) => cpuOf(`graphile-worker ${g.mode}`, g)),
    cpuOf('BullMQ', r.bullmq),
  ].join(', ');
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
    `| graphile-worker 0.17 (PostgreSQL), plain / batched (local queue 500, batched completions) | ` +
      `${fmt(h.graphilePlainOpsPerSec)} / ${fmt(h.graphileBatchedOpsPerSec)} ops/s |`,
    `| BullMQ 6 (Redis, appendfsync always) | ${fmt(h.bullmqOpsPerSec)} ops/s |`,
    `| raw ceiling: committed single-row UPDATEs, 16 connections | ${fmt(h.ceilingUpdatesPerSec)} /s → ÷ ${fmt(h.commitsPerOp, 2)} commits = ${fmt(h.ceilingOpsPerSec)} ops/s |`,
    `| ratio to pg-boss (best) | ${fmt(h.ratioToPgBoss, 2)}× |`,
    `| ratio to the best PostgreSQL peer (${fmt(h.bestPeerOpsPerSec)} ops/s) | ${fmt(h.ratioToBestPeer, 2)}× |`,
    `| server CPU per operation: durable-ops (MariaDB) / pg-boss / graphile-worker (PostgreSQL; the lower of each peer's runs) | ` +
      `${fmt(h.serverCpuMsPerOp, 2)} / ${fmt(h.pgBossServerCpuMsPerOp, 2)} / ${fmt(h.graphileServerCpuMsPerOp, 2)} ms (${fmt(h.serverCpuRatioToPgBoss, 2)}× pg-boss) |`,
    `| ratio to BullMQ | ${fmt(h.bullmqRatio, 2)}× |`,
    `| ratio to ceiling | ${fmt(h.ratioToCeiling, 2)}× |`,
    `| design floor: the same statements on bare mysql2, groups of 32, no library code | ${fmt(h.floorOpsPerSec)} ops/s = ${fmt(h.floorRatioToPgBoss, 2)}× pg-boss best; ` +
      `durable-ops reaches ${fmt(h.ratioToFloor, 2)}× of it |`,
    hc
      ? `| history cost ${fmt(hc.large.historyRows)} ÷ ${fmt(hc.small.historyRows)} rows: claim / admission / sweep | ` +
        `${fmt(hc.ratios.claim, 2)}× / ${fmt(hc.ratios.admission, 2)}× / ${fmt(hc.ratios.sweep, 2)}× (worst ${fmt(h.historyCostRatio, 2)}×; ` +
        `÷ the machine's drift ${fmt(hc.drift, 2)}× = ${fmt(h.historyCostRatioDriftCorrected, 2)}×) |`
      : '| history cost | n/a |',
    `| open loop at 50 % of saturation (${fmt(h.openLoop.ratePerSec)} arrivals/s), p50 / p99: admission / wake-up → running / admit → succeeded | ` +
      `${fmt(h.openLoop.admissionP50Ms, 1)} / ${fmt(h.openLoop.admissionP99Ms, 1)} ms; ${fmt(h.openLoop.claimP50Ms, 1)} / ${fmt(h.openLoop.claimP99Ms, 1)} ms; ` +
      `${fmt(h.openLoop.endToEndP50Ms, 1)} / ${fmt(h.openLoop.endToEndP99Ms, 1)} ms |`,
    og
      ? `| owner growth ${fmt(og.large.owners)} ÷ ${fmt(og.small.owners)} owners (mean per call): admission / claim | ` +
        `${fmt(og.admission.ratio, 2)}× / ${fmt(og.claim.ratio, 2)}× (medians ${fmt(og.admission.medianRatio, 2)}× / ${fmt(og.claim.medianRatio, 2)}×) |`
      : '| owner growth | n/a |',
    `| capacity state per owner (capacity_slots, owner_capacity, owner_turns, admission_buckets): the owner's own rows per task type (all rows, shared pools' included) / bytes | ` +
      `${fmt(h.capacityOwnerRowsPerOwnerPerTaskType, 2)} (${fmt(h.capacityRowsPerOwnerPerTaskType, 2)}) / ${fmt(h.capacityBytesPerOwner)} |`,
    oc
      ? `| occupancy: admission with the global pool ${fmt(oc.heldShare * 100)} % held ÷ empty (mean per call) | ${fmt(oc.occupancyCostRatio, 2)}× (median ${fmt(oc.admission.medianRatio, 2)}×) |`
      : '| occupancy | n/a |',
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
  if (ol) {
    const row = (name: string, x: LatencySummary) => `| ${name} | ${fmt(x.p50, 1)} | ${fmt(x.p90, 1)} | ${fmt(x.p99, 1)} | ${fmt(x.max, 1)} |`;
    lines.push(
      '',
      `Open loop (ms): ${fmt(ol.ops)} arrivals at ${fmt(ol.ratePerSec)}/s, evenly spaced over ${fmt(ol.seconds)} s (${fmt(ol.load * 100)} % of the durable-ops phase's ` +
        `${fmt(ol.saturationOpsPerSec)} ops/s), each timed from its scheduled time; ${fmt(ol.achievedPerSec)} succeeded/s; ${fmt(ol.idleWakeups)} idle wake-ups:`,
      '',
      '| from → to | p50 | p90 | p99 | max |',
      '| --- | --- | --- | --- | --- |',
      row('scheduled → admitOperation returned', ol.admission),
      row('wake-up sent → claim committed', ol.claim),
      row('scheduled → succeeded', ol.endToEnd),
      row("scheduled → admitOperation called (the bench process's own lateness, part of the rows above)", ol.schedulerLag),
    );
  }
  const costs = (x: LatencySummary) => `${fmt(x.p50, 2)} / ${fmt(x.p99, 2)} / ${fmt(x.mean, 2)}`;
  if (og) {
    const f = og.footprint;
    const row = (name: string, c: CostComparison, path: 'admission' | 'claim') =>
      `| ${name} | ${costs(c.baseline)} | ${costs(c.compared)} | ${fmt(c.ratio, 2)}× | ${fmt(c.medianRatio, 2)}× | ` +
      `${fmt(og.small.diskReadsPerCall[path], 2)} → ${fmt(og.large.diskReadsPerCall[path], 2)} |`;
    const mib = Object.values(f.bytes).reduce((a, b) => a + b, 0) / 2 ** 20;
    lines.push(
      '',
      `Owner growth (ms per call, p50 / p99 / mean of ${fmt(og.admission.baseline.count)} calls per arm, random owners; each owner has ${og.historyPerOwner} finished ` +
        `operations and the state of an owner that admitted before; filled in ${fmt(og.small.fillSeconds, 1)} s and ${fmt(og.large.fillSeconds, 1)} s):`,
      '',
      `| path | ${fmt(og.small.owners)} owners | ${fmt(og.large.owners)} owners | ratio of means | ratio of medians | pages read from disk per call |`,
      '| --- | --- | --- | --- | --- | --- |',
      row('admission', og.admission, 'admission'),
      row('claim', og.claim, 'claim'),
      '',
      `owner_turns rows before → after the timed rounds: ${fmt(og.small.ownerTurns.before)} → ${fmt(og.small.ownerTurns.after)} and ` +
        `${fmt(og.large.ownerTurns.before)} → ${fmt(og.large.ownerTurns.after)} (a completion deletes its owner's turn when nothing of it is left; a claim, the turns it passes that have nothing due). ` +
        `Capacity state of ${fmt(f.owners)} owners: ${fmt(f.rows.capacity_slots)} slot rows, ${fmt(f.rows.owner_capacity)} counter rows, ${fmt(f.rows.owner_turns)} turn rows, ` +
        `${fmt(f.rows.admission_buckets)} bucket rows, ${fmt(mib, 1)} MiB = ${fmt(f.rowsPerOwnerPerTaskType, 2)} rows and ${fmt(f.bytesPerOwner)} bytes per owner.`,
    );
  }
  if (oc) {
    lines.push(
      '',
      `Occupancy (ms per admission, p50 / p99 / mean of ${fmt(oc.admission.baseline.count)} each; global limit ${fmt(oc.globalLimit)}, ${fmt(oc.heldSlots)} slots held by ` +
        `queued operations): empty ${costs(oc.admission.baseline)}, ${fmt(oc.heldShare * 100)} % held ${costs(oc.admission.compared)}; ` +
        `ratio of means ${fmt(oc.admission.ratio, 2)}×, of medians ${fmt(oc.admission.medianRatio, 2)}×.`,
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
    ...(r.graphileWorker ?? []).map((g): [string, CpuShare] => [`graphile-worker ${g.mode}`, g.cpu.share]),
    ['BullMQ', r.bullmq?.cpu.share],
    [`history cost, ${fmt(r.settings.historyRows.small)} rows`, hc?.small.cpu],
    [`history cost, ${fmt(r.settings.historyRows.large)} rows`, hc?.large.cpu],
    ['open loop', ol?.cpu],
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
 * graphile-worker's best, BullMQ, and the ceiling ÷ commits per operation. A bar that was not measured is drawn empty
 * and labelled `n/a`.
 */
export function renderSvg(h: Headline, caption: string): string {
  const bars = [
    { label: 'durable-ops', value: h.endToEndOpsPerSec, color: '#2b6cb0' },
    { label: 'design floor', value: h.floorOpsPerSec, color: '#90cdf4' },
    { label: 'pg-boss (best)', value: h.pgBossOpsPerSec, color: '#718096' },
    { label: 'graphile-worker (best)', value: h.graphileOpsPerSec, color: '#8795a8' },
    { label: 'BullMQ (fsync always)', value: h.bullmqOpsPerSec, color: '#a0aec0' },
    { label: 'ceiling ÷ commits', value: h.ceilingOpsPerSec, color: '#cbd5e0' },
  ];
  // Room for six labels of up to ~22 characters at 12 px.
  const width = 780;
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
