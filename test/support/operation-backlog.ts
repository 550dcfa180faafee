import { sql, type CompiledQuery, type KyselyPlugin, type Transaction } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Database, TxContext } from '../../lib/db/database.js';
import type { Store } from '../../lib/db/store.js';
import type { OperationStatus } from '../../lib/operations/lifecycle/operation-status.js';
import { inTransaction } from '../../lib/db/transaction.js';
import { markOwnersReady } from '../../lib/operations/lease/owner-turns.repository.js';

/**
 * Backlogs of `operations` rows written straight into the table in bulk (multi-row INSERTs), valid per the schema and
 * per the state invariants (docs/design.md §2: a lease exactly while `running`, `finished_at` exactly when terminal,
 * `wake_at` / `available_at` only on claimable rows; claimable rows' owner turns ready, as admission leaves them), with
 * times from the store's database clock (`timeAt`). Plus,
 * on MariaDB, what a locking read cost: the index entries it read (`Handler_read_*`), the rows it holds locked, its plan.
 */

/** Milliseconds relative to the database clock's now (negative: in the past). */
type Offset = number;

/** One row of a backlog; `i` is its index in the backlog. */
export interface BacklogRow {
  readonly status: OperationStatus;
  readonly taskType?: string;
  readonly priority?: number;
  /** `deadline_at`. */
  readonly deadline: Offset;
  /** `available_at` (claimable states only; default: an hour ago). */
  readonly available?: Offset;
  /** `wake_at` (claimable states only; default: an hour from now). */
  readonly wake?: Offset;
  /** `lease_expires_at` (`running` only). */
  readonly leaseExpires?: Offset;
  /** `finished_at` (terminal states only). */
  readonly finished?: Offset;
}

const CLAIMABLE: readonly OperationStatus[] = ['queued', 'waiting_for_retry', 'waiting_for_external_fallback'];
const TERMINAL: readonly OperationStatus[] = ['succeeded', 'failed', 'cancelled'];

/** Rows per INSERT: 500 rows × 20 values stays under SQLite's 32,766 bound parameters. */
const CHUNK = 500;

let batchSeq = 0;

/**
 * Inserts `count` operations described by `row(i)` for owner `owner` (keys unique per call), in chunks of
 * {@link CHUNK}. Returns their ids in order (UUIDv7, as admission makes them).
 */
export async function insertBacklog(store: Store, count: number, row: (i: number) => BacklogRow, owner = 'backlog-owner'): Promise<string[]> {
  const batch = ++batchSeq;
  const ids: string[] = [];
  for (let start = 0; start < count; start += CHUNK) {
    const values = [];
    for (let i = start; i < Math.min(count, start + CHUNK); i++) {
      const r = row(i);
      const id = uuidv7();
      ids.push(id);
      const claimable = CLAIMABLE.includes(r.status);
      const running = r.status === 'running';
      const terminal = TERMINAL.includes(r.status);
      const created = Math.min(r.deadline, r.available ?? 0, r.finished ?? 0, r.leaseExpires ?? 0) - 7_200_000;
      values.push({
        id,
        owner_user_id: owner,
        task_type: r.taskType ?? 'test.noop',
        idempotency_key: `backlog-${batch}-${i}`,
        request_hash: 'a'.repeat(64),
        subject_type: 'doc',
        subject_id: `backlog-${batch}-${i}`,
        params_json: '{}',
        status: r.status,
        privacy_mode: 'local_only' as const,
        priority: r.priority ?? 0,
        attempt: running || terminal ? 1 : 0,
        max_attempts: 3,
        retry_count: 0,
        progress_percent: r.status === 'succeeded' ? 100 : 0,
        lease_token: running ? uuidv7().replace(/-/g, '').padEnd(64, '0') : null,
        lease_expires_at: running ? store.timeAt(r.leaseExpires ?? 30_000) : null,
        heartbeat_at: running ? store.timeAt((r.leaseExpires ?? 30_000) - 30_000) : null,
        failure_code: r.status === 'failed' ? 'permanent_error' : null,
        deadline_at: store.timeAt(r.deadline),
        available_at: claimable ? store.timeAt(r.available ?? -3_600_000) : null,
        wake_at: claimable ? store.timeAt(r.wake ?? 3_600_000) : null,
        created_at: store.timeAt(created),
        updated_at: store.timeAt(created),
        started_at: running || terminal ? store.timeAt(created + 1_000) : null,
        finished_at: terminal ? store.timeAt(r.finished ?? -60_000) : null,
      });
    }
    await store.db.insertInto('operations').values(values).execute();
    // As admission (and every move into a claimable state) leaves them: their owners' turns ready.
    const claimableIds = values.filter((v) => CLAIMABLE.includes(v.status)).map((v) => v.id);
    await inTransaction(store, (tx) => markOwnersReady(tx, claimableIds));
  }
  return ids;
}

/** MariaDB's `Handler_read_*` counters of the session: index entries and rows a statement read. */
export type HandlerReads = Readonly<Record<string, number>>;

/** The session's `Handler_read_*` counters (run it on the connection being measured). */
export async function handlerReads(db: Transaction<Database> | Store['db']): Promise<HandlerReads> {
  const { rows } = await sql<{ Variable_name: string; Value: string }>`SHOW SESSION STATUS LIKE 'Handler_read%'`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
}

/** The counters that grew from `before` to `after`, and their sum (`total`: every entry or row read). */
export function readsBetween(before: HandlerReads, after: HandlerReads): { readonly total: number; readonly counters: Record<string, number> } {
  const counters: Record<string, number> = {};
  for (const [name, value] of Object.entries(after)) {
    const grown = value - (before[name] ?? 0);
    if (grown !== 0) counters[name] = grown;
  }
  return { total: Object.values(counters).reduce((a, b) => a + b, 0), counters };
}

/** One `EXPLAIN` row (MariaDB). */
export interface ExplainRow {
  readonly table: string | null;
  readonly type: string | null;
  readonly key: string | null;
  readonly Extra: string | null;
}

/** What {@link inOpenTransaction} measured of `work`. */
export interface OpenTransaction<T> {
  readonly result: T;
  /** `Handler_read_*` growth over `work` (its connection only). */
  readonly reads: ReturnType<typeof readsBetween>;
  /** Every statement `work` sent, with the `EXPLAIN` of each SELECT (same parameters, same transaction). */
  readonly statements: readonly { readonly sql: string; readonly plan: readonly ExplainRow[] }[];
  /** The transaction's `CONNECTION_ID()`. */
  readonly connectionId: number;
}

function capturing(store: Store, sink: CompiledQuery[]): KyselyPlugin {
  const executor = store.db.getExecutor();
  return {
    transformQuery: (args) => {
      sink.push(executor.compileQuery(args.node, args.queryId));
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
}

/**
 * Runs `work` in a MariaDB transaction of its own, measures it (see {@link OpenTransaction}), then calls `whileOpen`
 * while that transaction still holds every lock `work` took, and then commits (`commit: true`) or rolls back.
 */
export async function inOpenTransaction<T>(
  store: Store,
  work: (tx: TxContext) => Promise<T>,
  whileOpen: (measured: OpenTransaction<T>) => Promise<void>,
  options: { readonly commit?: boolean } = {},
): Promise<OpenTransaction<T>> {
  const rollback = new Error('rollback');
  let measured: OpenTransaction<T> | undefined;
  try {
    await store.db.transaction().execute(async (trx) => {
      const sent: CompiledQuery[] = [];
      const connectionId = Number((await sql<{ id: number | string }>`SELECT CONNECTION_ID() AS id`.execute(trx)).rows[0]?.id);
      const before = await handlerReads(trx);
      const result = await work({ db: trx.withPlugin(capturing(store, sent)), timeAt: store.timeAt });
      const reads = readsBetween(before, await handlerReads(trx));
      const statements = [];
      for (const statement of sent) {
        const plan = /^\s*select/i.test(statement.sql) ? (await trx.executeQuery<ExplainRow>({ ...statement, sql: `EXPLAIN ${statement.sql}` })).rows : [];
        statements.push({ sql: statement.sql, plan });
      }
      measured = { result, reads, statements, connectionId };
      await whileOpen(measured);
      if (!options.commit) throw rollback;
    });
  } catch (error) {
    if (error !== rollback) throw error;
  }
  if (!measured) throw new Error('the transaction did not run');
  return measured;
}

/**
 * How many `operations` rows another transaction holds locked right now, seen from a third connection (`store`'s
 * pool): every row whose clustered record it holds, which a `FOR UPDATE SKIP LOCKED` read of the whole table through
 * the primary key skips. Exact and immediate (unlike `INNODB_TRX`, a cache InnoDB refreshes every 0.1 s).
 */
export async function locksHeldBy(store: Store): Promise<{ readonly rows: number }> {
  const rows = await store.db.transaction().execute(async (tx) => {
    const all = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM operations`.execute(tx);
    const free = await sql<{ id: string }>`SELECT id FROM operations FORCE INDEX (PRIMARY) FOR UPDATE SKIP LOCKED`.execute(tx);
    return Number(all.rows[0]?.n) - free.rows.length;
  });
  return { rows };
}

/** SQLite's `EXPLAIN QUERY PLAN` of every statement `work` sends (it runs them too, in a transaction it rolls back). */
export async function sqlitePlans(store: Store, work: (tx: TxContext) => Promise<unknown>): Promise<{ readonly sql: string; readonly plan: string }[]> {
  const sent: CompiledQuery[] = [];
  const rollback = new Error('rollback');
  await store.db
    .transaction()
    .execute(async (trx) => {
      await work({ db: trx.withPlugin(capturing(store, sent)), timeAt: store.timeAt });
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  const plans = [];
  for (const statement of sent) {
    const { rows } = await store.db.executeQuery<{ detail: string }>({ ...statement, sql: `EXPLAIN QUERY PLAN ${statement.sql}` });
    plans.push({ sql: statement.sql, plan: rows.map((r) => r.detail).join(' | ') });
  }
  return plans;
}
