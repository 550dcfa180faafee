import { setTimeout as delay } from 'node:timers/promises';
import type { TxContext } from '../db/database.js';
import type { Store } from '../db/store.js';
import { inTransaction } from '../db/transaction.js';
import { IndependentWriteBlockedError, isSqliteBusy } from './recovery-errors.js';

/** Attempts of an independent write on SQLite; waits between them grow 20, 40, 80, 160, 320 ms (about 0.6 s in all). */
const SQLITE_BUSY_ATTEMPTS = 6;

/**
 * Runs one ledger write in its own transaction on the store's **independent** connection (docs/design.md §8), never the
 * caller's. On SQLite, whose single writer may be held by another connection for a moment (a heartbeat, a cancel
 * being acknowledged), a busy database is retried briefly; if it stays busy — typically because the caller itself
 * holds an open write transaction — the write fails with {@link IndependentWriteBlockedError} after about 0.6 s instead
 * of hanging. MariaDB never meets this: every pooled connection can write.
 * @param what what was not recorded, for the error message (e.g. "the checkpoint").
 * @throws {IndependentWriteBlockedError} SQLite stayed write-locked; nothing was written.
 */
export async function writeIndependently<T>(store: Store, what: string, work: (tx: TxContext) => Promise<T>): Promise<T> {
  const independent = store.independent();
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await inTransaction(independent, work, { retries: 0 });
    } catch (error) {
      if (!isSqliteBusy(error)) throw error;
      if (attempt >= SQLITE_BUSY_ATTEMPTS) {
        throw new IndependentWriteBlockedError(
          `SQLite stayed write-locked by another connection (the caller's own open write transaction?); ${what} was not written.`,
          { cause: error },
        );
      }
      await delay(10 * 2 ** attempt);
    }
  }
}
