import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../lib/ai/circuit-breaker.js';

function breaker(failureThreshold = 3, cooldownMs = 1_000) {
  let now = 0;
  const b = new CircuitBreaker({ failureThreshold, cooldownMs, now: () => now });
  return { b, advance: (ms: number) => (now += ms) };
}

describe('circuit breaker', () => {
  it('opens only after N consecutive failures; a success in between resets the count', () => {
    const { b } = breaker(3);
    b.recordFailure();
    b.recordFailure();
    b.recordSuccess();
    b.recordFailure();
    b.recordFailure();
    expect(b.state).toBe('closed');
    b.recordFailure();
    expect(b.state).toBe('open');
    expect(b.tryAcquire()).toBeNull();
  });

  it('after the cool-down admits exactly one trial at a time; its success closes the breaker', () => {
    const { b, advance } = breaker(1);
    b.recordFailure();
    advance(999);
    expect(b.tryAcquire()).toBeNull();
    advance(1);
    const trial = b.tryAcquire();
    expect(trial).toEqual({ trial: true });
    expect(b.tryAcquire()).toBeNull();
    b.recordSuccess();
    expect(b.state).toBe('closed');
    expect(b.tryAcquire()).toEqual({ trial: false });
  });

  it('a failed trial re-opens for a whole new cool-down', () => {
    const { b, advance } = breaker(1);
    b.recordFailure();
    advance(1_000);
    expect(b.tryAcquire()).not.toBeNull();
    b.recordFailure();
    expect(b.state).toBe('open');
    advance(999);
    expect(b.tryAcquire()).toBeNull();
    advance(1);
    expect(b.tryAcquire()).toEqual({ trial: true });
  });

  it('a trial given back unused lets the next caller try; a closed permit given back changes nothing', () => {
    const { b, advance } = breaker(1);
    const closedPermit = b.tryAcquire();
    b.recordFailure();
    advance(1_000);
    const trial = b.tryAcquire();
    if (!trial || !closedPermit) throw new Error('expected permits');
    b.release(closedPermit);
    expect(b.tryAcquire()).toBeNull();
    b.release(trial);
    expect(b.tryAcquire()).toEqual({ trial: true });
  });

  it('refuses a threshold below 1 and a negative cool-down', () => {
    expect(() => new CircuitBreaker({ failureThreshold: 0, cooldownMs: 1 })).toThrow(RangeError);
    expect(() => new CircuitBreaker({ failureThreshold: 1, cooldownMs: -1 })).toThrow(RangeError);
  });
});
