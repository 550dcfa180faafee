import { sql, type Transaction } from 'kysely';
import { ForeignTransactionError } from '../errors.js';
import type { Capabilities } from './capabilities.js';
import type { Database, TxContext } from './database.js';
import type { Store } from './store.js';
import { inTransaction } from './transaction.js';

/**
 * Running a step of durable-ops inside a transaction its caller opened and will commit (docs/design.md §4, "Admission
 * inside the caller's transaction"): the checks that the transaction is the store's, a savepoint around the step's
 * writes so a refusal leaves the caller's transaction as it was, one step at a time per transaction, and the hook the
 * caller runs after its commit.
 */

/**
 * Options of a step run inside the caller's own database transaction (`admitOperation`, `retryOperation`). `DB`: the
 * tables the caller's transaction is typed with — durable-ops' own, plus any of the application's
 * (`trx.withTables<TheirTables>()`).
 */
export interface InCallerTransaction<DB extends Database = Database> {
  /**
   * The caller's **open** kysely transaction on `scope.store.db` (from `store.db.transaction().execute(trx => …)` or
   * `store.db.startTransaction()`; `trx.withTables<TheirTables>()` copies are the same transaction). Every statement of
   * the step runs on it, so the step commits or rolls back with the caller's own rows. The caller commits; after the
   * commit it calls the answer's `afterCommit()`. While a step on it is pending, run nothing else on it: a refused
   * step rolls back to its savepoint whatever ran on the transaction since the step began.
   */
  readonly transaction: Transaction<DB>;
}

/** What a step run in the caller's transaction leaves for after the caller's commit (the wake-up, the record). */
export interface AfterCommit {
  /**
   * Call once the caller's transaction **committed**: sends the operation's SQS wake-up (and records the lifecycle event).
   * Runs at most once (later calls resolve at once), never throws (a failed send is logged; the sweeper re-sends it), and
   * touches no database. Never called — the process died between the commit and this call — the sweeper's due wake-up
   * re-send wakes the operation at its `wake_at` (`WAKEUP_RESEND_SECONDS` after the admission, then one sweep interval at
   * most). Called before the commit, or after a rollback, it sends a hint a worker finds nothing for: harmless, but the
   * operation then waits for the sweeper.
   */
  afterCommit(): Promise<void>;
}

/**
 * The caller's transaction as a {@link TxContext} of `store` (its statements use the store's clock).
 * @throws {ForeignTransactionError} when `transaction` is not a kysely transaction, or was opened on another kysely
 * instance than `store.db` (another database, another pool): the step would commit apart from the caller's rows.
 */
export function callerTransaction<DB extends Database>(store: Store, transaction: Transaction<DB>): TxContext {
  const candidate = transaction as unknown as { isTransaction?: unknown; getExecutor?: unknown };
  const isTransaction = typeof candidate === 'object' && candidate !== null && candidate.isTransaction === true && typeof candidate.getExecutor === 'function';
  // One adapter per kysely instance, shared by every transaction (and `withTables` copy) it opens.
  if (!isTransaction || transaction.getExecutor().adapter !== store.db.getExecutor().adapter) throw new ForeignTransactionError();
  // Our tables are typed as ours whatever else `DB` adds, so the transaction may be used as one of `Database`.
  return { db: transaction as unknown as Transaction<Database>, timeAt: (deltaMs) => store.timeAt(deltaMs) };
}

/** Savepoints made by this process: each gets a name of its own, so steps may nest inside the caller's savepoints. */
let savepoints = 0;

/**
 * Runs `work` in the caller's transaction behind a savepoint (`SAVEPOINT` … `RELEASE SAVEPOINT`, the same on MariaDB
 * and SQLite). When `work` throws, everything it wrote is rolled back to the savepoint (`ROLLBACK TO SAVEPOINT`) and
 * the error rethrown: the caller's transaction is usable and holds none of it — a replay's duplicate key, a 422, a full
 * pool or an empty rate bucket leave it unchanged.
 *
 * A transient error (`caps.isTransient`: a MariaDB deadlock rolls the **whole** transaction back; a lock wait timeout
 * the statement) is rethrown as it is: the caller's transaction is to be run again whole. Should the rollback to the
 * savepoint itself fail after any other error, the caller's transaction may hold half a step: an `Error` saying so is
 * thrown (the first error as its `cause`), never the typed refusal, so the caller cannot mistake it for a clean one.
 */
export async function inSavepoint<T>(caps: Pick<Capabilities, 'isTransient'>, tx: TxContext, work: (tx: TxContext) => Promise<T>): Promise<T> {
  const name = sql.raw(`durable_ops_step_${++savepoints}`);
  await sql`SAVEPOINT ${name}`.execute(tx.db);
  let result: T;
  try {
    result = await work(tx);
  } catch (error) {
    try {
      await sql`ROLLBACK TO SAVEPOINT ${name}`.execute(tx.db);
      await sql`RELEASE SAVEPOINT ${name}`.execute(tx.db);
    } catch (rollbackError) {
      if (caps.isTransient(error)) throw error;
      throw new Error(`A durable-ops step failed and could not be rolled back to its savepoint (${String(rollbackError)}); roll the transaction back.`, { cause: error });
    }
    throw error;
  }
  await sql`RELEASE SAVEPOINT ${name}`.execute(tx.db);
  return result;
}

/**
 * `work` in a transaction of its own (`inTransaction`, retried whole on a transient error) — or, with the caller's
 * transaction, behind a savepoint in it ({@link inSavepoint}, never retried: a transient error is the caller's to retry).
 */
export function inOwnOrCallerTransaction<T>(store: Store, caller: TxContext | undefined, work: (tx: TxContext) => Promise<T>): Promise<T> {
  return caller ? inSavepoint(store.caps, caller, work) : inTransaction(store, work);
}

/** The steps in progress per transaction (keyed by its executor, which `withTables` copies share). */
const inProgress = new WeakMap<object, Promise<unknown>>();

/**
 * Runs `work` once every step this process started earlier on the same transaction has ended: statements of two
 * steps interleaved on one connection would break each other's savepoints (`Promise.all` of two admissions on one
 * transaction is then safe, one after the other).
 */
export function oneStepAtATime<T>(transaction: TxContext, work: () => Promise<T>): Promise<T> {
  const key = transaction.db.getExecutor();
  const before = inProgress.get(key) ?? Promise.resolve();
  const run = before.then(work);
  inProgress.set(key, run.catch(() => undefined));
  return run;
}

/**
 * `send` as an {@link AfterCommit.afterCommit}: run at most once; later calls share the first call's promise.
 */
export function once(send: () => Promise<void>): () => Promise<void> {
  let sent: Promise<void> | undefined;
  return () => (sent ??= send());
}
