import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Connection } from 'mysql2/promise';
import {
  admitOperation,
  claimNextOperation,
  completeOperation,
  enterOwnerScope,
  migrateToLatest,
  openStore,
  OwnerScope,
  TaskRegistry,
  WorkerScope,
  type Store,
} from '../lib/index.js';
import { alternate, compareCost, type CostComparison } from './alternate.js';
import { noCleanups, type Cleanups } from './cleanups.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner, benchTask, deployedCapacity, sequentialDeps } from './durable-ops-deps.js';
import { writtenBack } from './history-cost.js';
import { fillHistory } from './history-fill.js';
import { benchDatabaseName, connect, createBenchDatabase, globalStatus, type BenchDatabase } from './mariadb.js';

/** Options of {@link runOwnerGrowth}. */
export interface OwnerGrowthOptions {
  readonly serverUrl: string;
  /** Owners of the baseline arm (100). */
  readonly smallOwners: number;
  /** Owners of the compared arm (100,000; quick: 10,000). */
  readonly largeOwners: number;
  /** Finished operations in each owner's history (a few). */
  readonly historyPerOwner: number;
  /** Timed rounds per arm: each times one admission and one claim. */
  readonly rounds: number;
  /** Where the databases' drops are registered while they exist. */
  readonly cleanups?: Cleanups;
}

/** The tables of per-owner capacity and claim-order state: what one owner costs besides its operations. */
const CAPACITY_TABLES = ['capacity_slots', 'owner_capacity', 'owner_turns', 'admission_buckets'] as const;

/** What the per-owner capacity state of the compared arm takes, right after its fill. */
export interface CapacityFootprint {
  readonly owners: number;
  /** Task types registered, all of which every owner has admitted (the benchmark's one). */
  readonly taskTypes: number;
  /** Rows of each table (`COUNT(*)`), shared rows (the global pool's) included. */
  readonly rows: Readonly<Record<(typeof CAPACITY_TABLES)[number], number>>;
  /** `data_length + index_length` of each table (information_schema, after `ANALYZE TABLE`), in bytes. */
  readonly bytes: Readonly<Record<(typeof CAPACITY_TABLES)[number], number>>;
  /** All the tables' rows ÷ owners ÷ task types (the shared pools' rows included). */
  readonly rowsPerOwnerPerTaskType: number;
  /** Rows of the pools everyone shares (`capacity_slots` `global:…` and `route:…`): they do not grow with the owners. */
  readonly sharedRows: number;
  /** The rows that belong to an owner (all but {@link sharedRows}) ÷ owners ÷ task types: what one more owner costs. */
  readonly ownerRowsPerOwnerPerTaskType: number;
  /** All the tables' bytes ÷ owners. */
  readonly bytesPerOwner: number;
}

/** One arm of {@link runOwnerGrowth}. */
export interface OwnerArm {
  readonly owners: number;
  /** Seconds to load its history and owner state and for the server to write the load back. */
  readonly fillSeconds: number;
  /** `owner_turns` rows before and after the timed rounds (claims delete the turns they find with nothing due). */
  readonly ownerTurns: { readonly before: number; readonly after: number };
  /** InnoDB buffer-pool misses (pages read from disk) per timed call, server-wide. */
  readonly diskReadsPerCall: { readonly admission: number; readonly claim: number };
}

/** What {@link runOwnerGrowth} measured. */
export interface OwnerGrowthResult {
  readonly historyPerOwner: number;
  readonly small: OwnerArm;
  readonly large: OwnerArm;
  /** `admitOperation` for a random owner of the arm, ms per call (baseline: the small arm). */
  readonly admission: CostComparison;
  /** `claimNextOperation` taking that admission, ms per call. */
  readonly claim: CostComparison;
  /** The worse of the two ratios (mean ÷ mean): cost with `largeOwners` owners ÷ cost with `smallOwners`. */
  readonly ownerGrowthRatio: number;
  readonly footprint: CapacityFootprint;
  readonly problems: readonly string[];
}

/** Untimed rounds per arm before the timed ones (owners outside the population: the state it was filled with stays). */
const WARM_UP_ROUNDS = 30;

/** Rows per multi-row INSERT of owner ids, and owners per `INSERT … SELECT` of their cloned state. */
const CHUNK = 1_000;
const CLONE_CHUNK = 2_000;

/** One arm's database and what its timed rounds collect. */
interface Arm {
  readonly owners: number;
  readonly database: BenchDatabase;
  readonly store: Store;
  admitted: number;
  fillSeconds: number;
  readonly admissionMs: number[];
  readonly claimMs: number[];
  readonly reads: { admission: number; claim: number };
}

/** What one round measured: each call's ms and buffer-pool misses. */
interface Sample {
  readonly admissionMs: number;
  readonly claimMs: number;
  readonly reads: { readonly admission: number; readonly claim: number };
}

type Deps = ReturnType<typeof sequentialDeps>;

/**
 * Cost growth with owners. Two databases, one with `smallOwners` owners and one with `largeOwners`, each owner with
 * history — `historyPerOwner` finished operations (`fillHistory`) — and the state an owner that has admitted before
 * leaves behind: owner 0 admits, is claimed and completes through the library (its `owner_capacity` counter row, an
 * admission bucket where the task type has a rate, any `owner_turns` row), and those rows are cloned for every other
 * owner with bulk `INSERT … SELECT`s, the owner id swapped in — so the filled rows are exactly what the library wrote.
 * The limits are a default deployment's ({@link deployedCapacity}).
 *
 * Then {@link WARM_UP_ROUNDS} untimed rounds per arm (owners outside the population), and `rounds` timed rounds per
 * arm, the arms alternating ({@link alternate}): each admits one operation for a random owner of the arm and claims
 * it (both timed), then completes it (untimed), so every round starts with nothing queued. The ratio is each path's
 * mean per call, large ÷ small.
 *
 * An owner's turn row goes with its last operation (the completion retires it, docs/design.md §4), so owner 0 leaves
 * none to clone and the filled owners hold no turns: `ownerTurns` shows that (before and after the timed rounds, both
 * zero when nothing is left behind). A turn left behind would be ready ahead of the admitted owner, and the first
 * claims of an arm would walk past up to 256 such turns each.
 */
export async function runOwnerGrowth(options: OwnerGrowthOptions): Promise<OwnerGrowthResult> {
  const cleanups = options.cleanups ?? noCleanups;
  const deps = sequentialDeps(new TaskRegistry().register(benchTask(() => {})), deployedCapacity());
  const arms: Arm[] = [];
  const status = await connect(options.serverUrl);
  const problems: string[] = [];
  try {
    for (const owners of [options.smallOwners, options.largeOwners]) {
      const database = await createBenchDatabase(options.serverUrl, benchDatabaseName(`owners${owners}`));
      cleanups.set(`database ${database.name}`, () => database.drop());
      arms.push({ owners, database, store: openStore(database.url, { poolSize: 2 }), admitted: 0, fillSeconds: 0, admissionMs: [], claimMs: [], reads: { admission: 0, claim: 0 } });
    }
    for (const arm of arms) await fill(arm, options, deps, status, problems);
    const [small, large] = arms as [Arm, Arm];
    const footprint = await footprintOf(options.serverUrl, large, deps.registry.types().length);
    await alternate(WARM_UP_ROUNDS, arms, async (arm, round) => void (await sampleRound(arm, deps, benchOwner(arm.owners + round), status, problems)));
    const before = await Promise.all(arms.map(countTurns));
    await alternate(options.rounds, arms, async (arm) => {
      const sample = await sampleRound(arm, deps, benchOwner(randomInt(arm.owners)), status, problems);
      arm.admissionMs.push(sample.admissionMs);
      arm.claimMs.push(sample.claimMs);
      arm.reads.admission += sample.reads.admission;
      arm.reads.claim += sample.reads.claim;
    });
    const after = await Promise.all(arms.map(countTurns));
    const armOf = (arm: Arm, i: number): OwnerArm => ({
      owners: arm.owners,
      fillSeconds: arm.fillSeconds,
      ownerTurns: { before: before[i] as number, after: after[i] as number },
      diskReadsPerCall: { admission: arm.reads.admission / options.rounds, claim: arm.reads.claim / options.rounds },
    });
    const admission = compareCost(small.admissionMs, large.admissionMs);
    const claim = compareCost(small.claimMs, large.claimMs);
    return {
      historyPerOwner: options.historyPerOwner,
      small: armOf(small, 0),
      large: armOf(large, 1),
      admission,
      claim,
      ownerGrowthRatio: Math.max(admission.ratio, claim.ratio),
      footprint,
      problems,
    };
  } finally {
    await status.end();
    for (const arm of arms) {
      await arm.store.destroy();
      await arm.database.drop();
      cleanups.delete(`database ${arm.database.name}`);
    }
  }
}

/**
 * Migrates the arm's database and fills it: history, then owner 0's state made by the library (one untimed round),
 * cloned for owners `1 … owners − 1`; waits for the server to write the load back ({@link writtenBack}).
 */
async function fill(arm: Arm, options: OwnerGrowthOptions, deps: Deps, status: Connection, problems: string[]): Promise<void> {
  const started = performance.now();
  await migrateToLatest(arm.store);
  await fillHistory(options.serverUrl, arm.database.name, { from: 0, to: arm.owners * options.historyPerOwner, owners: arm.owners });
  await sampleRound(arm, deps, benchOwner(0), status, problems);
  const connection = await connect(options.serverUrl, arm.database.name);
  try {
    await cloneOwnerState(connection, benchOwner(0), arm.owners);
    await connection.query(`ANALYZE TABLE ${CAPACITY_TABLES.join(', ')}`);
  } finally {
    await connection.end();
  }
  await writtenBack(status);
  arm.fillSeconds = (performance.now() - started) / 1000;
}

/**
 * Copies `template`'s rows of the {@link CAPACITY_TABLES} to owners `1 … owners − 1` ({@link benchOwner}): every
 * column as the template has it, but the owner — `owner_user_id`, and the owner part of a per-owner pool's key
 * (`<prefix><task type>:<owner>`; shared pools such as the global one are not the template's and stay single). The
 * columns are read from the schema, so a column the library adds is copied too.
 */
async function cloneOwnerState(connection: Connection, template: string, owners: number): Promise<void> {
  await connection.query('CREATE TEMPORARY TABLE bench_owner_ids (k INT PRIMARY KEY, owner_user_id VARCHAR(128) NOT NULL)');
  for (let start = 1; start < owners; start += CHUNK) {
    const ids = Array.from({ length: Math.min(CHUNK, owners - start) }, (_, i) => [start + i, benchOwner(start + i)]);
    await connection.query('INSERT INTO bench_owner_ids (k, owner_user_id) VALUES ?', [ids]);
  }
  for (const table of CAPACITY_TABLES) {
    const [columnRows] = await connection.query(
      'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
      [table],
    );
    const columns = (columnRows as { name: string }[]).map((c) => c.name);
    const [owned, match] = columns.includes('owner_user_id') ? ['t.owner_user_id = ?', template] : ['t.pool_key LIKE ?', `%:${template}`];
    const copy = columns.map((c) =>
      c === 'owner_user_id' ? 'o.owner_user_id' : c === 'pool_key' ? `CONCAT(LEFT(t.pool_key, CHAR_LENGTH(t.pool_key) - ${template.length}), o.owner_user_id)` : `t.\`${c}\``,
    );
    await connection.query(`CREATE TEMPORARY TABLE bench_template SELECT * FROM \`${table}\` t WHERE ${owned}`, [match]);
    for (let start = 1; start < owners; start += CLONE_CHUNK) {
      await connection.query(
        `INSERT INTO \`${table}\` (${columns.map((c) => `\`${c}\``).join(', ')}) SELECT ${copy.join(', ')} FROM bench_template t JOIN bench_owner_ids o ON o.k >= ? AND o.k < ?`,
        [start, start + CLONE_CHUNK],
      );
    }
    await connection.query('DROP TEMPORARY TABLE bench_template');
  }
}

/**
 * One round for `owner`: admits an operation (timed), claims it (timed, with the buffer-pool misses of each), completes
 * it (untimed). The claim must take that operation: it is the only one queued.
 */
async function sampleRound(arm: Arm, deps: Deps, owner: string, status: Connection, problems: string[]): Promise<Sample> {
  const key = `owner-growth-${arm.admitted++}`;
  const r0 = await globalStatus(status, 'Innodb_buffer_pool_reads');
  const t0 = performance.now();
  await admitOperation(new OwnerScope(arm.store, owner), deps, key, { taskType: BENCH_TASK_TYPE, subject: { type: BENCH_SUBJECT_TYPE, id: key }, params: { i: arm.admitted } });
  const t1 = performance.now();
  const r1 = await globalStatus(status, 'Innodb_buffer_pool_reads');
  const worker = new WorkerScope(arm.store);
  const t2 = performance.now();
  const claim = await claimNextOperation(worker, deps);
  const t3 = performance.now();
  const r2 = await globalStatus(status, 'Innodb_buffer_pool_reads');
  if (!claim || claim.ownerUserId !== owner) {
    problems.push(`${arm.owners} owners: the claim after ${owner}'s admission took ${claim ? `${claim.ownerUserId}'s operation` : 'nothing'}`);
  }
  if (claim) await completeOperation(enterOwnerScope(worker, claim), claim);
  return { admissionMs: t1 - t0, claimMs: t3 - t2, reads: { admission: r1 - r0, claim: r2 - r1 } };
}

async function countTurns(arm: Arm): Promise<number> {
  const [rows] = await arm.store.db.selectFrom('owner_turns').select((eb) => eb.fn.countAll<number | string>().as('n')).execute();
  return Number(rows?.n ?? 0);
}

/** Rows and bytes of the {@link CAPACITY_TABLES} in the arm's database, per owner (and per task type registered). */
async function footprintOf(serverUrl: string, arm: Arm, taskTypes: number): Promise<CapacityFootprint> {
  const connection = await connect(serverUrl, arm.database.name);
  try {
    const rows = {} as Record<(typeof CAPACITY_TABLES)[number], number>;
    for (const table of CAPACITY_TABLES) {
      const [counted] = await connection.query(`SELECT COUNT(*) AS n FROM \`${table}\``);
      rows[table] = Number((counted as { n: unknown }[])[0]?.n ?? 0);
    }
    const [sized] = await connection.query(
      'SELECT TABLE_NAME AS name, DATA_LENGTH + INDEX_LENGTH AS bytes FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)',
      [CAPACITY_TABLES],
    );
    const bytesOf = new Map((sized as { name: string; bytes: unknown }[]).map((r) => [r.name, Number(r.bytes)]));
    const bytes = Object.fromEntries(CAPACITY_TABLES.map((t) => [t, bytesOf.get(t) ?? Number.NaN])) as Record<(typeof CAPACITY_TABLES)[number], number>;
    const [shared] = await connection.query("SELECT COUNT(*) AS n FROM capacity_slots WHERE pool_key LIKE 'global:%' OR pool_key LIKE 'route:%'");
    const sharedRows = Number((shared as { n: unknown }[])[0]?.n ?? 0);
    const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
    return {
      owners: arm.owners,
      taskTypes,
      rows,
      bytes,
      rowsPerOwnerPerTaskType: sum(rows) / arm.owners / taskTypes,
      sharedRows,
      ownerRowsPerOwnerPerTaskType: (sum(rows) - sharedRows) / arm.owners / taskTypes,
      bytesPerOwner: sum(bytes) / arm.owners,
    };
  } finally {
    await connection.end();
  }
}
