import { performance } from 'node:perf_hooks';
import { admitOperation, cancelOperation, DEFAULT_OWNER_SETTINGS, migrateToLatest, openStore, OwnerScope, TaskRegistry, TERMINAL_STATUSES, type Store } from '../lib/index.js';
import { alternate, compareCost, type CostComparison } from './alternate.js';
import { noCleanups, type Cleanups } from './cleanups.js';
import { BENCH_SUBJECT_TYPE, benchOwner, benchTask, deployedCapacity, sequentialDeps } from './durable-ops-deps.js';
import { warmPool } from './durable-ops-rig.js';
import { benchDatabaseName, createBenchDatabase } from './mariadb.js';

/** Options of {@link runOccupancy}. */
export interface OccupancyOptions {
  readonly serverUrl: string;
  /** Timed admissions per arm. */
  readonly rounds: number;
  /** Where the database's drop is registered while it exists. */
  readonly cleanups?: Cleanups;
}

/** What {@link runOccupancy} measured and checked. */
export interface OccupancyResult {
  /** The global limit of both task types (a default deployment's, {@link deployedCapacity}). */
  readonly globalLimit: number;
  /** Global slots of the held task type held by queued operations throughout the timed rounds. */
  readonly heldSlots: number;
  /** `heldSlots ÷ globalLimit` (0.9). */
  readonly heldShare: number;
  /** `admitOperation` per call, ms: baseline the empty pool, compared the 90 % held one. */
  readonly admission: CostComparison;
  /** `admission.ratio`: mean admission cost with the pool 90 % held ÷ with it empty. */
  readonly occupancyCostRatio: number;
  readonly problems: readonly string[];
}

/** The task type whose global pool stays empty, and the one whose pool is held at {@link HELD_SHARE}. */
const EMPTY_TYPE = 'bench.empty';
const HELD_TYPE = 'bench.held';
const HELD_SHARE = 0.9;

/** Owners whose admissions are timed (round-robin): none of them holds anything between rounds. */
const TIMED_OWNERS = 20;

/** Untimed rounds per arm before the timed ones. */
const WARM_UP_ROUNDS = 50;

/**
 * Admission cost against occupancy: two no-op task types with a default deployment's limits, one whose global pool is
 * empty and one whose global pool is {@link HELD_SHARE} held — by that many operations admitted through the library
 * (spread over owners at their own limit) and never claimed, so every held slot names a live `queued` operation, as
 * the library's checks expect, and the held slots are wherever the library's reservations put them. Then
 * {@link WARM_UP_ROUNDS} untimed and `rounds` timed rounds, the two types alternating ({@link alternate}): each
 * admits one operation of the type for one of {@link TIMED_OWNERS} other owners (timed) and cancels it (untimed), so
 * the held pool stays at its share and the empty one empty (both are checked afterwards). The ratio is the mean cost
 * per admission, held ÷ empty.
 */
export async function runOccupancy(options: OccupancyOptions): Promise<OccupancyResult> {
  const cleanups = options.cleanups ?? noCleanups;
  const database = await createBenchDatabase(options.serverUrl, benchDatabaseName('occupancy'));
  cleanups.set(`database ${database.name}`, () => database.drop());
  const store = openStore(database.url, { poolSize: 2 });
  try {
    await migrateToLatest(store);
    await warmPool(store, 2);
    const capacity = deployedCapacity();
    const deps = sequentialDeps(new TaskRegistry().register(benchTask(() => {}, EMPTY_TYPE)).register(benchTask(() => {}, HELD_TYPE)), capacity);
    const { perOwner, global } = capacity.admissionLimits(HELD_TYPE, DEFAULT_OWNER_SETTINGS.plan);
    const heldSlots = Math.floor(HELD_SHARE * global);
    let admitted = 0;
    const admit = async (taskType: string, owner: string) => {
      const key = `occupancy-${admitted++}`;
      return (await admitOperation(new OwnerScope(store, owner), deps, key, { taskType, subject: { type: BENCH_SUBJECT_TYPE, id: key }, params: { i: admitted } })).operation.id;
    };
    const holders = Math.ceil(heldSlots / perOwner);
    for (let i = 0; i < heldSlots; i++) await admit(HELD_TYPE, benchOwner(i % holders));
    const samples: Record<string, number[]> = { [EMPTY_TYPE]: [], [HELD_TYPE]: [] };
    const round = (timed: boolean) => async (taskType: string, k: number) => {
      const owner = benchOwner(holders + (k % TIMED_OWNERS));
      const t0 = performance.now();
      const id = await admit(taskType, owner);
      const t1 = performance.now();
      if (timed) samples[taskType]?.push(t1 - t0);
      await cancelOperation(new OwnerScope(store, owner), id);
    };
    await alternate(WARM_UP_ROUNDS, [EMPTY_TYPE, HELD_TYPE], round(false));
    await alternate(options.rounds, [EMPTY_TYPE, HELD_TYPE], round(true));
    const problems: string[] = [];
    for (const [taskType, expected] of [[EMPTY_TYPE, 0], [HELD_TYPE, heldSlots]] as const) {
      const active = await activeOperations(store, taskType);
      if (active !== expected) problems.push(`${taskType}: ${active} active operations after the rounds, expected ${expected}`);
    }
    const admission = compareCost(samples[EMPTY_TYPE] ?? [], samples[HELD_TYPE] ?? []);
    return { globalLimit: global, heldSlots, heldShare: heldSlots / global, admission, occupancyCostRatio: admission.ratio, problems };
  } finally {
    await store.destroy();
    await database.drop();
    cleanups.delete(`database ${database.name}`);
  }
}

/** Operations of the task type not yet terminal: each holds one global slot of its type. */
async function activeOperations(store: Store, taskType: string): Promise<number> {
  const row = await store.db
    .selectFrom('operations')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('task_type', '=', taskType)
    .where('status', 'not in', [...TERMINAL_STATUSES])
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
