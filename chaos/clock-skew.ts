/**
 * Replaces this process's `Date` with one that runs `skewMs` ahead of (or behind) the real clock: `Date.now()` and
 * `new Date()` are skewed, explicit dates are not, timers and `performance.now()` are untouched (they are monotonic).
 * The chaos harness skews worker processes by ± 2 minutes; durable-ops must not care, because leases, deadlines and
 * retry times are computed by the database clock (docs/design.md §3), never the worker's.
 * @returns a setter for the skew, in **ms**.
 */
export function installSkewableClock(): (skewMs: number) => void {
  const RealDate = Date;
  let skew = 0;
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + skew);
      else super(...(args as [string]));
    }
    static override now(): number {
      return RealDate.now() + skew;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
  return (skewMs) => {
    skew = skewMs;
  };
}
