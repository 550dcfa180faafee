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
}

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
  return { db, caps: store.caps, timeAt: (deltaMs) => store.timeAt(deltaMs), independent: () => store.independent(), destroy: () => store.destroy() };
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
 * tables it reads without an index. Identical statements (same SQL text) are explained once.
 */
export async function explainStatements(connection: Connection, statements: readonly CapturedStatement[]): Promise<StatementPlan[]> {
  const seen = new Set<string>();
  const plans: StatementPlan[] = [];
  for (const statement of statements) {
    if (!explainable(statement.sql) || seen.has(`${statement.path}\n${statement.sql}`)) continue;
    seen.add(`${statement.path}\n${statement.sql}`);
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
    plans.push({ path: statement.path, sql: oneLine(statement.sql).slice(0, 160), plan, fullScans: fullScans(plan) });
  }
  return plans;
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
