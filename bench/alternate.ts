import { ratio, summarize, type LatencySummary } from './stats.js';

/**
 * Runs `rounds` rounds that each call `step` once per arm, the arms' order reversed every other round (A B, B A, A B,
 * …): the machine's drift and a noisy neighbour's bursts fall on every arm alike, and neither always goes first (a
 * cost comparison measured one arm after the other would carry the drift between the two measurements).
 */
export async function alternate<A>(rounds: number, arms: readonly A[], step: (arm: A, round: number) => Promise<void>): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const arm of round % 2 === 0 ? arms : [...arms].reverse()) await step(arm, round);
  }
}

/** One path's per-call cost in a baseline arm and a compared arm, measured side by side ({@link alternate}); in ms. */
export interface CostComparison {
  readonly baseline: LatencySummary;
  readonly compared: LatencySummary;
  /**
   * Mean ÷ mean: the cost of the whole batch of calls per call (the inverse ratio of the batch's throughput), every
   * call counted — one call a hundred times slower moves it, as it would a workload's throughput.
   */
  readonly ratio: number;
  /** Median ÷ median: how the typical call grew, for comparison. */
  readonly medianRatio: number;
}

/** {@link CostComparison} of two arms' samples (ms). */
export function compareCost(baseline: readonly number[], compared: readonly number[]): CostComparison {
  const b = summarize(baseline);
  const c = summarize(compared);
  return { baseline: b, compared: c, ratio: ratio(c.mean, b.mean), medianRatio: ratio(c.p50, b.p50) };
}
