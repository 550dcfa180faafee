import type { CompiledQuery, KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import type { Connection } from 'mysql2/promise';
import type { Store } from '../lib/index.js';
import { median } from './stats.js';

/** One statement a code path ran, as sent to the database. */
export interface CapturedStatement {
  /** Which code path ran it: `claim`, `admission` or `sweep`. */
  readonly path: string;
  readonly sql: string;
  readonly parameters: readonly unknown[];
  /** Milliseconds from compiling it to its result (connection wait included); undefined if it failed. */
  ms?: number;
}

/** The median time of one statement shape (same path and SQL text) at two history sizes. */
export interface StatementTiming {
  readonly path: string;
  readonly sql: string;
  readonly count: number;
  readonly smallMs: number;
  readonly largeMs: number;
}

/** One row of MariaDB's `EXPLAIN` output (the columns the check reads). */
export interface PlanRow {
  readonly table: string | null;
  readonly type: string | null;
  readonly key: string | null;
  readonly rows: number | null;
  readonly extra: string | null;
}

/** The plan of one captured statement, and whether it reads a whole table. */
export interface StatementPlan {
  readonly path: string;
  /** The SQL, shortened to its first 160 characters for the report. */
  readonly sql: string;
  readonly plan: readonly PlanRow[];
  /** Tables it reads without an index (`type` ALL, or no `key` on a table access). */
  readonly fullScans: readonly string[];
  /** The plan sorts its rows (`Using filesort`) instead of reading them in an index's order. */
  readonly filesort?: boolean;
  /**
   * For a locking batch read of the claim or the sweeper (`… LIMIT n FOR UPDATE SKIP LOCKED`): the index entries and
   * rows it read when run once more at explain time (the growth of the session's `Handler_read_*` counters, in a
   * transaction rolled back at once), and its `LIMIT`.
   */
  readonly reads?: { readonly entries: number; readonly limit: number };
}

/**
 * Paths whose statements must read an index in their own order and stop at their batch (docs/design.md §3 for the
 * claim, §6 for the sweeper).
 */
export const BATCH_PATHS: ReadonlySet<string> = new Set(['claim', 'sweep']);

/** Entries a batch read may read beyond its `LIMIT`: the entry that ends its index range early. */
const RANGE_END_ALLOWANCE = 1;

/**
 * A store whose every statement is also compiled into `sink` (a kysely plugin on the store's own connection): the exact
 * SQL and parameters the real code paths send, for `EXPLAIN`. Transactions, the clock and the capabilities are the
 * store's own.
 */
export function capturingStore(store: Store, path: string, sink: CapturedStatement[]): Store {
  const executor = store.db.getExecutor();
  const running = new WeakMap<object, { statement: CapturedStatement; started: number }>();
  const plugin: KyselyPlugin = {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      const compiled: CompiledQuery = executor.compileQuery(args.node, args.queryId);
      const statement: CapturedStatement = { path, sql: compiled.sql, parameters: compiled.parameters };
      sink.push(statement);
      running.set(args.queryId, { statement, started: performance.now() });
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      const run = running.get(args.queryId);
      if (run) run.statement.ms = performance.now() - run.started;
      return args.result;
    },
  };
  const db = store.db.withPlugin(plugin);
  return { db, caps: store.caps, timeAt: (deltaMs) => store.timeAt(deltaMs), clockOffsetMs: () => store.clockOffsetMs(), independent: () => store.independent(), destroy: () => store.destroy() };
}

/**
 * Pairs the statements of two runs of the same paths (at the small and the large history size) by path and SQL text,
 * with the median time of each, largest growth first.
 */
export function compareTimings(small: readonly CapturedStatement[], large: readonly CapturedStatement[]): StatementTiming[] {
  const group = (statements: readonly CapturedStatement[]) => {
    const groups = new Map<string, number[]>();
    for (const s of statements) {
      if (s.ms === undefined) continue;
      const key = `${s.path}\n${oneLine(s.sql)}`;
      groups.set(key, [...(groups.get(key) ?? []), s.ms]);
    }
    return groups;
  };
  const before = group(small);
  const after = group(large);
  const timings: StatementTiming[] = [];
  for (const [key, ms] of after) {
    const baseline = before.get(key);
    if (!baseline) continue;
    const [path, sql] = key.split('\n') as [string, string];
    timings.push({ path, sql: sql.slice(0, 160), count: ms.length, smallMs: median(baseline), largeMs: median(ms) });
  }
  return timings.sort((a, b) => b.largeMs - b.smallMs - (a.largeMs - a.smallMs));
}

/** Statements `EXPLAIN` can say something about: reads, and writes that locate rows (not plain `INSERT … VALUES`). */
function explainable(sql: string): boolean {
  const head = sql.trimStart().slice(0, 12).toLowerCase();
  return head.startsWith('select') || head.startsWith('update') || head.startsWith('delete') || (head.startsWith('insert') && /\bselect\b/i.test(sql));
}

/**
 * `EXPLAIN`s every explainable statement on `connection` (the database they ran on) and reports, per statement, the
 * tables it reads without an index and whether it sorts. The locking batch reads of {@link BATCH_PATHS} (a `SELECT` with
 * `LIMIT ?` and `FOR UPDATE`) are also run once more, each in a transaction rolled back at once, to count the index
 * entries and rows they read (`reads`). Identical statements (same SQL text; for those batch reads, also the same
 * parameters) are explained once.
 */
export async function explainStatements(connection: Connection, statements: readonly CapturedStatement[]): Promise<StatementPlan[]> {
  const seen = new Set<string>();
  const plans: StatementPlan[] = [];
  for (const statement of statements) {
    const limit = BATCH_PATHS.has(statement.path) ? batchLimit(statement) : undefined;
    // A batch read is explained per parameter set too: the sweeper sends one text per status, with the status bound.
    const key = `${statement.path}\n${statement.sql}${limit === undefined ? '' : `\n${JSON.stringify(statement.parameters)}`}`;
    if (!explainable(statement.sql) || seen.has(key)) continue;
    seen.add(key);
    const [rows] = await connection.query(`EXPLAIN ${statement.sql}`, statement.parameters as unknown[]);
    const plan = (rows as Record<string, unknown>[]).map(
      (r): PlanRow => ({
        table: (r.table as string | null) ?? null,
        type: (r.type as string | null) ?? null,
        key: (r.key as string | null) ?? null,
        rows: r.rows === null || r.rows === undefined ? null : Number.parseFloat(String(r.rows)),
        extra: (r.Extra as string | null) ?? null,
      }),
    );
    const reads = limit === undefined ? undefined : { entries: await entriesRead(connection, statement), limit };
    plans.push({
      path: statement.path,
      sql: oneLine(statement.sql).slice(0, 160),
      plan,
      fullScans: fullScans(plan),
      filesort: plan.some((r) => (r.extra ?? '').includes('filesort')),
      ...(reads ? { reads } : {}),
    });
  }
  return plans;
}

/**
 * What is wrong with a plan: a full scan, on any path; on {@link BATCH_PATHS}, also a sort, and a batch read that read
 * more index entries than its `LIMIT` (plus the one entry that may end its range).
 */
export function planProblems(plan: StatementPlan): string[] {
  const problems: string[] = [];
  if (plan.fullScans.length > 0) problems.push(`FULL SCAN of ${plan.fullScans.join(', ')} in the ${plan.path} statement: ${plan.sql}`);
  if (!BATCH_PATHS.has(plan.path)) return problems;
  if (plan.filesort) problems.push(`FILESORT in the ${plan.path} statement (not read in index order): ${plan.sql}`);
  if (plan.reads && plan.reads.entries > plan.reads.limit + RANGE_END_ALLOWANCE) {
    problems.push(`SCAN BEYOND THE BATCH in the ${plan.path} statement: ${plan.reads.entries} index entries read for LIMIT ${plan.reads.limit}: ${plan.sql}`);
  }
  return problems;
}

/** The `LIMIT` of a locking `SELECT … LIMIT ? … FOR UPDATE`, from its bound parameters; undefined for any other statement. */
function batchLimit(statement: CapturedStatement): number | undefined {
  const sql = oneLine(statement.sql);
  const limitAt = sql.search(/\blimit \?/i);
  if (!/^select\b/i.test(sql) || limitAt < 0 || !/\bfor update\b/i.test(sql)) return undefined;
  const value = statement.parameters[(sql.slice(0, limitAt).match(/\?/g) ?? []).length];
  return typeof value === 'number' ? value : undefined;
}

/** Runs `statement` in a transaction rolled back at once and returns how much its `Handler_read_*` counters grew. */
async function entriesRead(connection: Connection, statement: CapturedStatement): Promise<number> {
  const counters = async () => {
    const [rows] = await connection.query("SHOW SESSION STATUS LIKE 'Handler_read%'");
    return (rows as { Value: unknown }[]).reduce((sum, r) => sum + Number(r.Value), 0);
  };
  await connection.beginTransaction();
  try {
    const before = await counters();
    await connection.query(statement.sql, statement.parameters as unknown[]);
    return (await counters()) - before;
  } finally {
    await connection.rollback();
  }
}

/** How many rows of each kind {@link seedPlanBacklog} writes: twice the batch, so every batch read's `LIMIT` binds. */
const BACKLOG_BATCHES = 2;

/**
 * Writes, on `connection`'s database, a backlog for every batch read of the claim and the sweeper to face before its
 * plan is checked: `2 × batch` rows of task type `taskType` (one nothing claims) in each of these — waiting operations
 * past their deadline with their wake-up due, per waiting state; running operations whose lease expired; terminal
 * operations beyond `retentionMs`; and queued operations of the highest priority, claimable and older than anything
 * else. A claim or sweeper statement that cannot stop at its batch then reads past them (bulk `INSERT … SELECT` over
 * MariaDB's `seq_0_to_n` sequence table; ids, keys and subjects unique per row).
 */
export async function seedPlanBacklog(connection: Connection, options: { readonly batch: number; readonly retentionMs: number; readonly taskType: string }): Promise<void> {
  const n = BACKLOG_BATCHES * options.batch;
  const columns =
    'id, owner_user_id, task_type, idempotency_key, request_hash, subject_type, subject_id, params_json, status, privacy_mode, priority, attempt, ' +
    'max_attempts, retry_count, progress_percent, deadline_at, available_at, wake_at, lease_token, lease_expires_at, heartbeat_at, started_at, finished_at, created_at, updated_at';
  const now = 'UTC_TIMESTAMP(6)';
  const kinds: readonly { readonly kind: string; readonly count: number; readonly values: string }[] = [
    {
      kind: 'deadline',
      count: 3 * n,
      values: `ELT(1 + seq % 3, 'queued', 'waiting_for_retry', 'waiting_for_external_fallback'), 'local_only', 0, 0, 3, 0, 0,
        ${now} - INTERVAL 1 HOUR + INTERVAL seq MICROSECOND, ${now} - INTERVAL 2 HOUR, ${now} - INTERVAL 30 MINUTE + INTERVAL seq MICROSECOND,
        NULL, NULL, NULL, NULL, NULL`,
    },
    {
      kind: 'lease',
      count: n,
      values: `'running', 'local_only', 0, 1, 3, 0, 0, ${now} + INTERVAL 1 HOUR, NULL, NULL, REPEAT('b', 64),
        ${now} - INTERVAL 1 MINUTE + INTERVAL seq MICROSECOND, ${now} - INTERVAL 2 MINUTE, ${now} - INTERVAL 2 MINUTE, NULL`,
    },
    {
      kind: 'purge',
      count: n,
      values: `'succeeded', 'local_only', 0, 1, 3, 0, 100, ${now} - INTERVAL ${options.retentionMs + 86_400_000} * 1000 MICROSECOND, NULL, NULL, NULL, NULL, NULL,
        ${now} - INTERVAL ${options.retentionMs + 86_400_000} * 1000 MICROSECOND, ${now} - INTERVAL ${options.retentionMs + 3_600_000} * 1000 MICROSECOND + INTERVAL seq MICROSECOND`,
    },
    {
      kind: 'claim',
      count: n,
      values: `'queued', 'local_only', 1000, 0, 3, 0, 0, ${now} + INTERVAL 1 HOUR, ${now} - INTERVAL 1 DAY + INTERVAL seq MICROSECOND, ${now} + INTERVAL 1 HOUR,
        NULL, NULL, NULL, NULL, NULL`,
    },
  ];
  for (const { kind, count, values } of kinds) {
    await connection.query(
      `INSERT INTO operations (${columns})
       SELECT CONCAT('plan-${kind}-', LPAD(seq, 36 - ${`plan-${kind}-`.length}, '0')), 'plan-backlog', ?, CONCAT('plan-${kind}-', seq), REPEAT('a', 64), 'plan', CONCAT('${kind}-', seq), '{}',
         ${values}, ${now} - INTERVAL 1 YEAR, ${now} - INTERVAL 1 YEAR
       FROM seq_0_to_${count - 1}`,
      [options.taskType],
    );
  }
}

/** Tables a plan reads whole: access type `ALL`, or a table access with no index chosen. Derived tables are not tables. */
export function fullScans(plan: readonly PlanRow[]): string[] {
  return plan
    .filter((r) => r.table !== null && !r.table.startsWith('<') && (r.type === 'ALL' || (r.type !== null && r.key === null && r.type !== 'system' && r.type !== 'const')))
    .map((r) => r.table as string);
}

function oneLine(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}
