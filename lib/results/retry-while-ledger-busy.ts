import { setTimeout as delay } from 'node:timers/promises';
import { IndependentWriteBlockedError } from '../recovery/recovery-errors.js';

/** Attempts of {@link retryWhileLedgerBusy}; the waits between them grow 20, 40, 80, 160, 320 ms (~0.6 s in all). */
const ATTEMPTS = 6;

/**
 * Runs a re-entrant ledger step again while SQLite's single writer is busy. On SQLite the ledger's independent
 * connection fails at once (`IndependentWriteBlockedError`, nothing written) whenever another connection holds the
 * write lock — including this process's own short transactions, such as the worker acknowledging a cancel at the
 * moment a task compensates. Waiting briefly lets such a transaction commit. MariaDB never throws this error.
 * Only for steps that are safe to repeat after writing nothing (compensation resumes from the recorded state).
 * @throws the step's error once it is not `IndependentWriteBlockedError`, or after the last attempt.
 */
export async function retryWhileLedgerBusy<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await step();
    } catch (error) {
      if (!(error instanceof IndependentWriteBlockedError) || attempt >= ATTEMPTS) throw error;
      await delay(10 * 2 ** attempt);
    }
  }
}
