import { setTimeout as delay } from 'node:timers/promises';
import type { Capabilities } from './capabilities.js';

/** Options of {@link retryTransient}. Delays in **milliseconds**. */
export interface TransientRetryOptions {
  /** Times `work` is run again after a transient error. @default 3 */
  readonly retries?: number;
  /** The first retry's nominal delay; each later one doubles it. @default 5 */
  readonly baseDelayMs?: number;
  /** The nominal delay's cap. @default 100 */
  readonly maxDelayMs?: number;
  /** Jitter source in [0, 1). @default Math.random */
  readonly random?: () => number;
}

/**
 * Runs `work`, and runs it again when it fails with an error `caps.isTransient` accepts (MariaDB deadlock 1213, lock
 * wait timeout 1205, "record has changed" 1020; `SQLITE_BUSY`) — the one place every deadlock and lock-wait retry of
 * the store goes through. Between tries it waits an exponential backoff with full jitter ("Exponential Backoff And
 * Jitter", AWS Architecture Blog): a random delay in `[0, min(maxDelayMs, baseDelayMs × 2^try))`, so two transactions
 * that deadlocked do not collide again in lockstep. Bounded: at most `retries` more tries, at most
 * `retries × maxDelayMs` of waiting (by default 3 and 300 ms).
 * @throws whatever `work` throws that is not transient, or the last transient error once the retries are used up.
 */
export async function retryTransient<T>(caps: Pick<Capabilities, 'isTransient'>, work: () => Promise<T>, options: TransientRetryOptions = {}): Promise<T> {
  const retries = options.retries ?? 3;
  const base = options.baseDelayMs ?? 5;
  const max = options.maxDelayMs ?? 100;
  const random = options.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= retries || !caps.isTransient(error)) throw error;
      await delay(Math.floor(random() * Math.min(max, base * 2 ** attempt)));
    }
  }
}
