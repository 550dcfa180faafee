import { setTimeout as delay } from 'node:timers/promises';

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this many ms. @default 10000 */
  timeoutMs?: number;
  /** Poll interval in ms. @default 50 */
  intervalMs?: number;
  /** What is awaited, for the error message. */
  what?: string;
}

/**
 * Polls `probe` until it returns a truthy value and returns that value: the suite's only way to wait
 * (never a fixed sleep).
 * @throws {Error} when the deadline passes first.
 */
export async function waitFor<T>(probe: () => Promise<T> | T, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for ${options.what ?? 'condition'}${last ? `: ${String(last)}` : ''}`);
    }
    await delay(options.intervalMs ?? 50);
  }
}
