/**
 * Latency statistics of the benchmark harness. Percentiles use the nearest-rank method (the smallest sample with at
 * least p % of the samples at or below it), so every reported figure is a latency that was actually observed.
 */

/** A summary of latency samples, in **milliseconds**. */
export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/**
 * The nearest-rank `p`th percentile of `samples` (unsorted; not modified).
 * @param p a percentile in (0, 100].
 * @returns NaN for no samples.
 * @throws {RangeError} for p outside (0, 100].
 */
export function percentile(samples: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1] as number;
}

/** The median (the nearest-rank 50th percentile; NaN for no samples). */
export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** Count, p50, p90, p99, max and mean of `samples` (all NaN but `count` for no samples). */
export function summarize(samples: readonly number[]): LatencySummary {
  if (samples.length === 0) return { count: 0, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.ceil((p / 100) * sorted.length) - 1] as number;
  const sum = sorted.reduce((total, x) => total + x, 0);
  return { count: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1] as number, mean: sum / sorted.length };
}

/** `a ÷ b`, or NaN when either is not a finite number or `b` is 0. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}

/** Rounds to `digits` decimals, keeping NaN (JSON turns it into null). */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
