import { describe, expect, it } from 'vitest';
import { retryTransient } from '../../lib/db/transient-retry.js';

const transient = Object.assign(new Error('Deadlock found when trying to get lock'), { errno: 1213 });
const caps = { isTransient: (error: unknown) => error === transient };

describe('retryTransient: deadlock and lock-wait retries back off with jitter, bounded', () => {
  it('runs the work again after each transient error, at most `retries` more times, then throws the last one', async () => {
    let runs = 0;
    const failing = retryTransient(caps, async () => {
      runs++;
      throw transient;
    }, { retries: 3, baseDelayMs: 1, maxDelayMs: 2 });
    await expect(failing).rejects.toBe(transient);
    expect(runs).toBe(4);
  });

  it('never retries an error that is not transient', async () => {
    let runs = 0;
    const permanent = new Error('duplicate key');
    await expect(retryTransient(caps, async () => {
      runs++;
      throw permanent;
    })).rejects.toBe(permanent);
    expect(runs).toBe(1);
  });

  it('waits a random delay below the capped exponential nominal before each retry', async () => {
    const draws: number[] = [];
    let runs = 0;
    const started = performance.now();
    const value = await retryTransient(caps, async () => {
      if (++runs < 4) throw transient;
      return 'done';
    }, { baseDelayMs: 10, maxDelayMs: 20, random: () => (draws.push(draws.length), 0.5) });
    expect(value).toBe('done');
    expect(draws).toHaveLength(3);
    // nominal delays 10, 20, 20 (capped); half of each with random = 0.5: 5 + 10 + 10 = 25 ms at least
    expect(performance.now() - started).toBeGreaterThanOrEqual(24);
  });
});
