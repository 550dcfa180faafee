/** The three states of a {@link CircuitBreaker}. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/** Settings of a {@link CircuitBreaker}. */
export interface BreakerOptions {
  /** Consecutive failures that open a closed breaker. At least 1. */
  readonly failureThreshold: number;
  /** How long an open breaker refuses calls before it lets one trial through, in **milliseconds**. */
  readonly cooldownMs: number;
  /** Clock in ms since the epoch. @default Date.now */
  readonly now?: () => number;
}

/**
 * Leave to make one call through a {@link CircuitBreaker}; `trial` marks the one call a half-open breaker admits. Each
 * trial permit is a distinct object, so giving back a stale one never frees another caller's trial.
 */
export interface BreakerPermit {
  readonly trial: boolean;
}

const CLOSED_PERMIT: BreakerPermit = Object.freeze({ trial: false });

/**
 * A process-local circuit breaker for one model route (docs/design.md §5; the pattern of Nygard, *Release It!*):
 *
 * ```
 *  closed ──N consecutive failures──▶ open ──cool-down passed, one trial admitted──▶ half_open
 *    ▲                                  ▲                                              │
 *    └──────────── trial succeeded ─────┼──────────────────────────────────────────────┤
 *                                       └──────────── trial failed ────────────────────┘
 * ```
 * Callers ask {@link tryAcquire} before they take work for the route; an admitted caller reports exactly one of
 * {@link recordSuccess}, {@link recordFailure} or {@link release} (it took no call after all). While half-open only
 * one trial is admitted at a time. Not shared across processes: each Lambda container learns on its own.
 */
export class CircuitBreaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #now: () => number;
  #failures = 0;
  #openUntil: number | undefined;
  #trial: BreakerPermit | undefined;

  /** @throws {RangeError} for a threshold below 1 or a negative cool-down. */
  constructor(options: BreakerOptions) {
    if (!Number.isInteger(options.failureThreshold) || options.failureThreshold < 1) throw new RangeError('failureThreshold must be an integer ≥ 1');
    if (!(options.cooldownMs >= 0)) throw new RangeError('cooldownMs must be ≥ 0');
    this.#threshold = options.failureThreshold;
    this.#cooldownMs = options.cooldownMs;
    this.#now = options.now ?? Date.now;
  }

  /** The current state; an open breaker whose cool-down has passed reports `half_open`. */
  get state(): BreakerState {
    if (this.#openUntil === undefined) return 'closed';
    return this.#trial !== undefined || this.#now() >= this.#openUntil ? 'half_open' : 'open';
  }

  /** When an open breaker admits its next trial, in ms since the epoch; undefined when closed. */
  get retryAt(): number | undefined {
    return this.#openUntil;
  }

  /**
   * Asks to make one call. Closed: always a permit. Open: `null` until the cool-down has passed, then a trial permit
   * for exactly one caller until that caller reports back.
   */
  tryAcquire(): BreakerPermit | null {
    if (this.#openUntil === undefined) return CLOSED_PERMIT;
    if (this.#trial !== undefined || this.#now() < this.#openUntil) return null;
    this.#trial = Object.freeze({ trial: true });
    return this.#trial;
  }

  /** The route answered: closes the breaker and resets the failure count. */
  recordSuccess(): void {
    this.#failures = 0;
    this.#openUntil = undefined;
    this.#trial = undefined;
  }

  /** The route failed: a failed trial re-opens for another cool-down; the Nth consecutive failure opens a closed breaker. */
  recordFailure(): void {
    this.#failures += 1;
    if (this.#openUntil !== undefined || this.#failures >= this.#threshold) {
      this.#openUntil = this.#now() + this.#cooldownMs;
      this.#trial = undefined;
    }
  }

  /**
   * An admitted caller made no call after all: its trial permit, if it is still the current trial, is given back (the
   * next caller may try). Safe to call after the caller reported an outcome, and more than once.
   */
  release(permit: BreakerPermit): void {
    if (permit === this.#trial) this.#trial = undefined;
  }
}
