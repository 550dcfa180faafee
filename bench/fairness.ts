import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { prepareAdmissionPools } from '../lib/capacity/capacity.js';
import { databaseNow } from '../lib/db/database-clock.js';
import { parseDbTime } from '../lib/db/db-time.js';
import {
  admitOperation,
  CapacityExhaustedError,
  capacityPolicy,
  DEFAULT_OWNER_SETTINGS,
  defineTask,
  migrateToLatest,
  noopMetrics,
  openStore,
  OwnerScope,
  processWakeup,
  setOwnerPlan,
  TaskRegistry,
  type AdmissionDeps,
  type CapacityPolicy,
  type Logger,
  type RunOutcome,
  type Store,
  type TaskDefinition,
  type WakeupMessage,
  type WorkerDeps,
} from '../lib/index.js';
import type { Cleanups } from './cleanups.js';
import { cpuShare, cpuSnapshot, type CpuShare } from './cpu.js';
import { BENCH_SUBJECT_TYPE, benchPolicy, CountingWakeups, ExecutionLog } from './durable-ops-deps.js';
import { warmPool } from './durable-ops-rig.js';
import { benchDatabaseName, createBenchDatabase } from './mariadb.js';
import { summarize, type LatencySummary } from './stats.js';
import { WakeupQueue } from './wakeup-queue.js';

/** Worker invocations at once (the deployment's `maximumConcurrency`), each handling one SQS record. */
const WORKERS = 10;
/** How long one flood operation runs, in ms. */
const FLOOD_RUN_MS = 2_000;
/** The flood is admitted at this many times what the workers can run (`WORKERS` operations per `FLOOD_RUN_MS`). */
const FLOOD_OVERLOAD = 3;
/** Flood admissions per second. */
const FLOOD_PER_SECOND = (FLOOD_OVERLOAD * WORKERS * 1000) / FLOOD_RUN_MS;
/**
 * The flooding owner's running limit: W − 1. A running operation's slot cannot be taken back, so the sizing rule keeps
 * at least one invocation of headroom for every other owner.
 */
const FLOOD_RUNNING_LIMIT = WORKERS - 1;
/** The flooding owner's plan: its capacity-file entry gives it that running limit and a large admission limit. */
const FLOOD_PLAN = 'bulk';
const FLOOD_OWNER = 'fair-flood';
const LIGHT_OWNERS = 20;
/** A light operation runs uniformly 50–100 ms; each light owner admits one every 2–4 s (uniform jitter). */
const LIGHT_RUN_MS = { min: 50, max: 100 } as const;
const LIGHT_EVERY_MS = { min: 2_000, max: 4_000 } as const;
/** Admission limit of a light owner (default plan): far above the one or two it ever has active. */
const LIGHT_PER_OWNER = 10;
/** After the flood starts, this long passes before its window is measured (its slots fill within a second). */
const RAMP_SECONDS = 2;
/** Length of the window after the flood stopped admitting, in s. */
const AFTER_SECONDS = 5;
/** After the last window, how long the light operations admitted in it may take to start (else reported unstarted). */
const TAIL_MS = 15_000;
const TASK_TYPE = 'bench.sleep';

/**
 * How wake-ups reach `processWakeup`: `invocations` worker invocations at once, each receiving up to `batchSize`
 * waiting records, handling them concurrently and ending when the slowest ends.
 */
export interface ExecutionModel {
  /** For the report, e.g. `10 invocations × 1 record`. */
  readonly name: string;
  readonly invocations: number;
  readonly batchSize: number;
}

/** The deployed model: W invocations of one record each. */
const ONE_RECORD: ExecutionModel = { name: `${WORKERS} invocations × 1 record`, invocations: WORKERS, batchSize: 1 };
/** The model before it: 4 invocations of batches of up to 10 records. */
const BATCHES: ExecutionModel = { name: '4 invocations × batches of up to 10', invocations: 4, batchSize: 10 };

/** Options of {@link runFairness}. */
export interface FairnessOptions {
  /** `mysql://…/` of the server; each execution model gets a database of its own there. */
  readonly serverUrl: string;
  /** Light owners alone before anything is measured, in s. */
  readonly warmupSeconds: number;
  /** Length of each measured window (baseline, flood), in s. */
  readonly phaseSeconds: number;
  /** Where dropping the databases is registered while pending. */
  readonly cleanups?: Cleanups;
}

/** What one measured window saw. */
export interface WindowFigures {
  /** The window's length, in s. */
  readonly seconds: number;
  /** Light operations admitted in the window: `created_at` → `started_at` (DB clock), in ms. */
  readonly lightWait: LatencySummary;
  /** Light operations admitted in the window that had not started when the run ended. */
  readonly lightUnstarted: number;
  /** Flood operations finished in the window, per s. */
  readonly floodOpsPerSec: number;
  /** Flood operations running on average: time in `running` (`started_at` → `finished_at`, DB clock) ÷ wall time. */
  readonly floodRunning: number;
  /**
   * Invocations held by flood operations on average: `processWakeup` calls that ran one (claim, run, completion) ÷
   * wall time. Above {@link floodRunning} by each operation's claim and completion time.
   */
  readonly floodHeld: number;
  /** The same for light operations. */
  readonly lightHeld: number;
  /** Invocation-time spent on invocations that ran an operation ÷ (invocations × wall time), 0..1. */
  readonly utilisation: number;
  /** `processWakeup` calls that found nothing to claim. */
  readonly idleWakeups: number;
  /** Flood operations admitted and not yet started at the window's end. */
  readonly floodQueued: number;
  /** CPU shares of the machine during the window. */
  readonly cpu: CpuShare;
}

/** One execution model's run. */
export interface ModelRun {
  readonly model: ExecutionModel;
  /** The light owners alone (measured for the deployed model only). */
  readonly baseline: WindowFigures | null;
  /** Light owners and the flood. */
  readonly flood: WindowFigures;
  /**
   * After the flood stopped admitting, from {@link RAMP_SECONDS} after (the light owners go on; the deployed model
   * only): does its backlog keep running? No sweeper runs in the bench (it re-sends a wake-up `WAKEUP_RESEND_SECONDS`
   * after admission).
   */
  readonly after: WindowFigures | null;
  /** Most flood operations running at once over the whole run (`started_at` / `finished_at`). */
  readonly floodMaxRunning: number;
  /** Admissions accepted over the whole run, and wake-ups the admissions and workers sent. */
  readonly floodAdmitted: number;
  readonly lightAdmitted: number;
  readonly wakeupsSent: number;
  /** Errors, warnings, refused admissions, unstarted or doubled work (empty when clean). */
  readonly problems: readonly string[];
}

/** One acceptance check of the fairness run. */
export interface FairnessCheck {
  readonly check: string;
  readonly value: string;
  readonly pass: boolean;
}

/** What {@link runFairness} measured and checked. */
export interface FairnessResult {
  /** The load and the windows: `…Ms` in ms, `…Seconds` in s, `floodPerSecond` admissions per s. */
  readonly settings: {
    readonly workers: number;
    readonly floodRunMs: number;
    readonly floodPerSecond: number;
    readonly floodRunningLimit: number;
    readonly floodAdmissionLimit: number;
    readonly lightOwners: number;
    readonly lightRunMs: { readonly min: number; readonly max: number };
    readonly lightEveryMs: { readonly min: number; readonly max: number };
    readonly warmupSeconds: number;
    readonly phaseSeconds: number;
    readonly rampSeconds: number;
    readonly afterSeconds: number;
  };
  /** The deployed model (W × 1 record): baseline and flood. */
  readonly current: ModelRun;
  /** The A/B: the batch model under the same flood. */
  readonly batched: ModelRun;
  readonly checks: readonly FairnessCheck[];
  /** Everything wrong with the run besides the checks (errors, rejections, unstarted or doubled work). */
  readonly problems: readonly string[];
}

/**
 * The noisy-neighbour benchmark on MariaDB: twenty light owners submit short operations at a steady pace while one
 * owner floods the same task type with 2 s operations at three times what the workers can run (its plan's running
 * limit W − 1, its admission limit high enough never to refuse it). The deployed execution model — W worker
 * invocations, each taking one wake-up from the in-process queue, calling `processWakeup` (claim in fair order, run to
 * the end) and taking the next — is measured with the light owners alone (baseline) and with the flood; then the
 * earlier model (4 invocations of batches of up to 10) under the same flood, each in a database of its own.
 */
export async function runFairness(options: FairnessOptions): Promise<FairnessResult> {
  const floodAdmissionLimit = Math.ceil(FLOOD_PER_SECOND * (RAMP_SECONDS + options.phaseSeconds + TAIL_MS / 1000)) + 100;
  const capacity = fairnessCapacity(floodAdmissionLimit);
  const current = await runModel(options, capacity, ONE_RECORD, true);
  const batched = await runModel(options, capacity, BATCHES, false);
  const baseline = current.baseline as WindowFigures;
  const flood = current.flood;
  const waitBound = 1.5 * baseline.lightWait.p99 + 1000;
  const floodDue = Math.min(FLOOD_RUNNING_LIMIT, WORKERS - flood.lightHeld);
  const checks: FairnessCheck[] = [
    { check: 'light p99 (flood) ≤ 1.5 × light p99 (baseline) + 1 s', value: `${ms(flood.lightWait.p99)} ≤ ${ms(waitBound)}`, pass: flood.lightWait.p99 <= waitBound },
    { check: 'worker utilisation during the flood ≥ 90 %', value: `${(flood.utilisation * 100).toFixed(1)} %`, pass: flood.utilisation >= 0.9 },
    {
      check: `flood holds on average ≥ 90 % of the invocations it may: min(limit ${FLOOD_RUNNING_LIMIT}, W − light owners' share)`,
      value: `${flood.floodHeld.toFixed(2)} of ${floodDue.toFixed(2)}`,
      pass: flood.floodHeld >= 0.9 * floodDue,
    },
    {
      check: `flood never above its running limit (${FLOOD_RUNNING_LIMIT})`,
      value: `max ${current.floodMaxRunning} / ${batched.floodMaxRunning} (batches)`,
      pass: Math.max(current.floodMaxRunning, batched.floodMaxRunning) <= FLOOD_RUNNING_LIMIT,
    },
  ];
  return {
    settings: {
      workers: WORKERS,
      floodRunMs: FLOOD_RUN_MS,
      floodPerSecond: FLOOD_PER_SECOND,
      floodRunningLimit: FLOOD_RUNNING_LIMIT,
      floodAdmissionLimit,
      lightOwners: LIGHT_OWNERS,
      lightRunMs: LIGHT_RUN_MS,
      lightEveryMs: LIGHT_EVERY_MS,
      warmupSeconds: options.warmupSeconds,
      phaseSeconds: options.phaseSeconds,
      rampSeconds: RAMP_SECONDS,
      afterSeconds: AFTER_SECONDS,
    },
    current,
    batched,
    checks,
    problems: [...current.problems.map((p) => `${current.model.name}: ${p}`), ...batched.problems.map((p) => `${batched.model.name}: ${p}`)],
  };
}

function ms(x: number): string {
  return `${Math.round(x)} ms`;
}

/**
 * The limits of the run: light owners on the default plan (admission limit {@link LIGHT_PER_OWNER}, the default running
 * limit); the flooding owner on {@link FLOOD_PLAN}, from a capacity file, with `floodAdmissionLimit` and running limit
 * W − 1; a global limit above both.
 */
function fairnessCapacity(floodAdmissionLimit: number): CapacityPolicy {
  return capacityPolicy(
    { perOwner: LIGHT_PER_OWNER, global: floodAdmissionLimit + LIGHT_OWNERS * LIGHT_PER_OWNER, retryAfterSeconds: 1 },
    { plans: { [FLOOD_PLAN]: { perOwner: floodAdmissionLimit, runningPerOwner: FLOOD_RUNNING_LIMIT } } },
  );
}

function lightOwner(k: number): string {
  return `fair-light-${String(k).padStart(2, '0')}`;
}

/** The task of both kinds of owner: sleeps `ms`, recording the run and (in `calls`' context) whose it was. */
function sleepTask(executions: ExecutionLog, calls: AsyncLocalStorage<Call>): TaskDefinition {
  return defineTask({
    type: TASK_TYPE,
    paramsSchema: z.object({ ms: z.number().int().min(0).max(60_000) }).strict(),
    timeoutMs: 60_000,
    async run({ operationId, ownerUserId, params, signal }) {
      executions.record(operationId);
      const call = calls.getStore();
      if (call) call.ran = ownerUserId === FLOOD_OWNER ? 'flood' : 'light';
      await sleep(params.ms, undefined, { signal });
    },
  });
}

/** A window's bounds on the bench clock (performance.now) and on the database clock (epoch ms). */
interface Window {
  readonly t0: number;
  readonly t1: number;
  readonly d0: number;
  readonly d1: number;
}

/** A measured window and the machine's CPU shares during it. */
interface Measured {
  readonly window: Window;
  readonly cpu: CpuShare;
}

/** An instant on both clocks. */
interface Mark {
  readonly t: number;
  readonly d: number;
}

/** One operation row, times as epoch ms on the database clock. */
interface Row {
  readonly flood: boolean;
  readonly created: number;
  readonly started: number | null;
  readonly finished: number | null;
}

/**
 * Runs one execution model in a database of its own: warm-up, then the windows — with `allWindows` baseline, flood and
 * after, else the flood alone — each after its settling time, then the tail.
 */
async function runModel(options: FairnessOptions, capacity: CapacityPolicy, model: ExecutionModel, allWindows: boolean): Promise<ModelRun> {
  const database = await createBenchDatabase(options.serverUrl, benchDatabaseName(allWindows ? 'fair' : 'fairbatch'));
  options.cleanups?.set(`database ${database.name}`, () => database.drop());
  const admissionStore = openStore(database.url, { poolSize: 8 });
  // One store per invocation, as each is its own Lambda instance: claims and completions group within an invocation
  // (the records of one batch), never across invocations. Pool size: one connection per record, plus one.
  const stores = Array.from({ length: model.invocations }, () => openStore(database.url, { poolSize: model.batchSize + 1 }));
  try {
    await migrateToLatest(admissionStore);
    await warmPool(admissionStore, 8);
    for (const store of stores) await warmPool(store, model.batchSize + 1);
    await setOwnerPlan(admissionStore, FLOOD_OWNER, FLOOD_PLAN);
    for (const owner of [FLOOD_OWNER, ...Array.from({ length: LIGHT_OWNERS }, (_, k) => lightOwner(k))]) {
      await prepareAdmissionPools(admissionStore, capacity, TASK_TYPE, owner, owner === FLOOD_OWNER ? FLOOD_PLAN : DEFAULT_OWNER_SETTINGS.plan);
    }
    const problems: string[] = [];
    const logger: Logger = { debug: () => {}, info: () => {}, warn: (message) => void problems.push(`warning: ${message}`), error: (message) => void problems.push(`error: ${message}`) };
    const executions = new ExecutionLog();
    const queue = new WakeupQueue();
    const workers = new Invocations(model, queue, problems);
    const registry = new TaskRegistry().register(sleepTask(executions, workers.calls));
    const policy = benchPolicy();
    const wakeups = new CountingWakeups((message) => queue.push(message));
    const load = new Load(admissionStore, { registry, policy, wakeups, logger, metrics: noopMetrics, capacity });
    const running = stores.map((store) => workers.run({ store, registry, policy, wakeups, logger, metrics: noopMetrics, capacity }));
    const mark = async (): Promise<Mark> => ({ t: performance.now(), d: parseDbTime(await databaseNow(admissionStore)).getTime() });
    const windowOf = (start: Mark, end: Mark): Window => ({ t0: start.t, t1: end.t, d0: start.d, d1: end.d });

    const measure = async (seconds: number): Promise<Measured> => {
      const start = await mark();
      const cpu = cpuSnapshot();
      await sleep(seconds * 1000);
      return { window: windowOf(start, await mark()), cpu: cpuShare(cpu, cpuSnapshot(), availableParallelism()) };
    };

    load.startLight();
    await sleep(options.warmupSeconds * 1000);
    const baseline = allWindows ? await measure(options.phaseSeconds) : null;
    load.startFlood();
    await sleep(RAMP_SECONDS * 1000);
    const flood = await measure(options.phaseSeconds);
    let after: Measured | null = null;
    if (allWindows) {
      load.stopFlood();
      await sleep(RAMP_SECONDS * 1000);
      after = await measure(AFTER_SECONDS);
    }
    // The load goes on until every light operation of the windows has started (or the tail runs out).
    const last = (after ?? flood).window.d1;
    const tailEnd = performance.now() + TAIL_MS;
    while (performance.now() < tailEnd && (await lightUnstartedBefore(admissionStore, last)) > 0) await sleep(250);
    await load.stop();
    workers.stop();
    await Promise.all(running);

    const rows = await readRows(admissionStore);
    const figures = (w: Measured) => windowFigures(rows, w.window, w.cpu, workers, model.invocations);
    const current = { baseline: baseline && figures(baseline), flood: figures(flood), after: after && figures(after) };
    for (const w of [current.baseline, current.flood, current.after]) if (w && w.lightUnstarted > 0) problems.push(`${w.lightUnstarted} light operations had not started ${TAIL_MS / 1000} s after their window`);
    if (load.rejections.flood > 0) problems.push(`${load.rejections.flood} flood admissions refused (429): the admission limit is too low for the run`);
    if (load.rejections.light > 0) problems.push(`${load.rejections.light} light admissions refused (429)`);
    problems.push(...load.errors.map((e) => `admission: ${e}`));
    const doubled = executions.duplicated();
    if (doubled.length > 0) problems.push(`${doubled.length} operations executed more than once`);
    return {
      model,
      ...current,
      floodMaxRunning: maxRunning(rows.filter((r) => r.flood)),
      floodAdmitted: load.admitted.flood,
      lightAdmitted: load.admitted.light,
      wakeupsSent: wakeups.sent,
      problems,
    };
  } finally {
    await admissionStore.destroy();
    for (const store of stores) await store.destroy();
    await database.drop();
    options.cleanups?.delete(`database ${database.name}`);
  }
}

/** Light operations created before `beforeMs` (DB clock, epoch ms) that have not started. */
async function lightUnstartedBefore(store: Store, beforeMs: number): Promise<number> {
  const row = await store.db
    .selectFrom('operations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('owner_user_id', '!=', FLOOD_OWNER)
    .where('started_at', 'is', null)
    .where('created_at', '<', new Date(beforeMs).toISOString().replace('T', ' ').replace('Z', ''))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

async function readRows(store: Store): Promise<Row[]> {
  const rows = await store.db.selectFrom('operations').select(['owner_user_id', 'created_at', 'started_at', 'finished_at']).execute();
  const at = (value: string | null) => (value === null ? null : parseDbTime(value).getTime());
  return rows.map((r) => ({ flood: r.owner_user_id === FLOOD_OWNER, created: at(r.created_at) as number, started: at(r.started_at), finished: at(r.finished_at) }));
}

/** Length of `[from, to)` ∩ `[w0, w1)`. */
function overlap(from: number, to: number, w0: number, w1: number): number {
  return Math.max(0, Math.min(to, w1) - Math.max(from, w0));
}

function windowFigures(rows: readonly Row[], w: Window, cpu: CpuShare, workers: Invocations, invocations: number): WindowFigures {
  const span = w.d1 - w.d0;
  const floodRunning = rows.filter((r) => r.flood && r.started !== null).reduce((sum, r) => sum + overlap(r.started as number, r.finished ?? Infinity, w.d0, w.d1), 0) / span;
  const held = (kind: Call['ran']) => workers.ran.filter((c) => c.ran === kind).reduce((sum, c) => sum + overlap(c.start, c.end, w.t0, w.t1), 0) / (w.t1 - w.t0);
  const light = rows.filter((r) => !r.flood && r.created >= w.d0 && r.created < w.d1);
  const started = light.filter((r) => r.started !== null);
  return {
    seconds: span / 1000,
    lightWait: summarize(started.map((r) => (r.started as number) - r.created)),
    lightUnstarted: light.length - started.length,
    floodOpsPerSec: rows.filter((r) => r.flood && r.finished !== null && r.finished >= w.d0 && r.finished < w.d1).length / (span / 1000),
    floodRunning,
    floodHeld: held('flood'),
    lightHeld: held('light'),
    utilisation: workers.busy.reduce((sum, b) => sum + overlap(b.start, b.end, w.t0, w.t1), 0) / (invocations * (w.t1 - w.t0)),
    idleWakeups: workers.idleAt.filter((t) => t >= w.t0 && t < w.t1).length,
    floodQueued: rows.filter((r) => r.flood && r.created < w.d1 && (r.started === null || r.started >= w.d1)).length,
    cpu,
  };
}

/** Most rows running at once (a run that ends at the instant another starts does not overlap it). */
function maxRunning(rows: readonly Row[]): number {
  const events = rows.flatMap((r) => (r.started === null ? [] : [{ at: r.started, d: 1 }, { at: r.finished ?? Infinity, d: -1 }]));
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of events) max = Math.max(max, (now += e.d));
  return max;
}

/**
 * The admissions: each light owner one operation every 2–4 s, and once started the flood at {@link FLOOD_PER_SECOND}
 * on a fixed schedule. Each admission is sent without waiting for the one before (open loop), as independent API
 * requests are.
 */
class Load {
  readonly admitted = { light: 0, flood: 0 };
  readonly rejections = { light: 0, flood: 0 };
  readonly errors: string[] = [];
  readonly #light = abortController(LIGHT_OWNERS);
  readonly #flooding = new AbortController();
  readonly #loops: Promise<void>[] = [];
  readonly #inflight = new Set<Promise<void>>();
  readonly #scopes = new Map<string, OwnerScope>();
  #seq = 0;

  constructor(
    private readonly store: Store,
    private readonly deps: AdmissionDeps,
  ) {}

  startLight(): void {
    for (let k = 0; k < LIGHT_OWNERS; k++) this.#loops.push(this.#lightOwner(lightOwner(k)));
  }

  startFlood(): void {
    this.#loops.push(this.#flood());
  }

  /** Stops the flood's admissions (the light owners go on). */
  stopFlood(): void {
    this.#flooding.abort();
  }

  /** Stops admitting and waits for the admissions in flight. */
  async stop(): Promise<void> {
    this.#light.abort();
    this.#flooding.abort();
    await Promise.all(this.#loops);
    await Promise.all(this.#inflight);
  }

  async #lightOwner(owner: string): Promise<void> {
    // Owners start spread over one interval, so they do not all admit at the same instant.
    if (!(await this.#pause(Math.random() * LIGHT_EVERY_MS.max, this.#light.signal))) return;
    do this.#admit(owner, uniform(LIGHT_RUN_MS));
    while (await this.#pause(uniform(LIGHT_EVERY_MS), this.#light.signal));
  }

  async #flood(): Promise<void> {
    const start = performance.now();
    for (let i = 1; ; i++) {
      this.#admit(FLOOD_OWNER, FLOOD_RUN_MS);
      if (!(await this.#pause(start + (i * 1000) / FLOOD_PER_SECOND - performance.now(), this.#flooding.signal))) return;
    }
  }

  #admit(owner: string, ms: number): void {
    const kind = owner === FLOOD_OWNER ? 'flood' : 'light';
    let scope = this.#scopes.get(owner);
    if (!scope) this.#scopes.set(owner, (scope = new OwnerScope(this.store, owner)));
    const i = this.#seq++;
    const admission = admitOperation(scope, this.deps, `fair-${i}`, { taskType: TASK_TYPE, subject: { type: BENCH_SUBJECT_TYPE, id: `s-${i}` }, params: { ms } }).then(
      () => void this.admitted[kind]++,
      (error: unknown) => {
        if (error instanceof CapacityExhaustedError) this.rejections[kind]++;
        else this.errors.push(String(error));
      },
    );
    this.#inflight.add(admission);
    void admission.finally(() => this.#inflight.delete(admission));
  }

  /** Waits `ms`; false once `signal` aborts. */
  async #pause(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await sleep(Math.max(0, ms), undefined, { signal });
      return true;
    } catch {
      return false;
    }
  }
}

/** An AbortController whose signal `listeners` sleeps may wait on at once without Node's leak warning. */
function abortController(listeners: number): AbortController {
  const controller = new AbortController();
  setMaxListeners(listeners, controller.signal);
  return controller;
}

function uniform(range: { readonly min: number; readonly max: number }): number {
  return Math.round(range.min + Math.random() * (range.max - range.min));
}

/** One `processWakeup` call: when (performance.now), and whose operation it ran (set by the task). */
interface Call {
  readonly start: number;
  end: number;
  ran?: 'flood' | 'light';
}

/**
 * The worker invocations of one execution model: each loop takes up to `batchSize` waiting wake-ups (one when the
 * batch size is 1), calls `processWakeup` for each concurrently and takes the next batch once all have returned.
 * Records the busy invocations (those that ran an operation), the calls that ran one, and when each idle wake-up was
 * spent.
 */
class Invocations {
  readonly busy: { start: number; end: number }[] = [];
  readonly ran: Call[] = [];
  readonly idleAt: number[] = [];
  /** The call in progress, for the task to say whose operation it ran. */
  readonly calls = new AsyncLocalStorage<Call>();
  #stopped = false;

  constructor(
    private readonly model: ExecutionModel,
    private readonly queue: WakeupQueue,
    private readonly problems: string[],
  ) {}

  /** One invocation loop with its own deps (its own store and claim group), until {@link stop}. */
  async run(deps: WorkerDeps): Promise<void> {
    while (!this.#stopped) {
      const batch = await this.queue.takeBatch(this.model.batchSize, 100);
      if (batch.length === 0) continue;
      const start = performance.now();
      const outcomes = await Promise.all(batch.map((message) => this.#handle(deps, message)));
      const end = performance.now();
      if (outcomes.some((outcome) => outcome !== 'idle' && outcome !== 'error')) this.busy.push({ start, end });
      for (const outcome of outcomes) if (outcome === 'idle') this.idleAt.push(end);
    }
  }

  /** Lets every loop end after the invocation it is in. */
  stop(): void {
    this.#stopped = true;
  }

  async #handle(deps: WorkerDeps, message: WakeupMessage): Promise<RunOutcome | 'idle' | 'error'> {
    const call: Call = { start: performance.now(), end: Number.NaN };
    try {
      return await this.calls.run(call, () => processWakeup(deps, () => 900_000, message));
    } catch (error) {
      // SQS would redeliver the message after its visibility timeout: put it back.
      this.problems.push(`processWakeup threw: ${String(error)}`);
      this.queue.push(message);
      return 'error';
    } finally {
      call.end = performance.now();
      if (call.ran) this.ran.push(call);
    }
  }
}
