import type { RetryPolicy } from '../../tasks/task-definition.js';

/**
 * Delay before the attempt after `attempt` failed, in **milliseconds**: exponential backoff with "equal
 * jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): half of the capped exponential delay is
 * fixed, half is random, so retries spread out but never come sooner than half the nominal delay.
 *
 * `nominal = min(maxDelayMs, baseDelayMs × 2^(attempt − 1))`, result in `[nominal/2, nominal]`.
 * @param attempt the 1-based attempt that just failed.
 * @param random a source in [0, 1); injected so tests are deterministic.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const nominal = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
