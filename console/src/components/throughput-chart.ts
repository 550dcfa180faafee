import { html } from 'htm/preact';
import { useId } from 'preact/hooks';
import type { ThroughputBucket } from '../api/types.js';
import { formatMinute } from '../format/format.js';

/** The series drawn, each a line in its own colour (CSS class `series-<key>`). */
export const SERIES = [
  { key: 'admitted', label: 'Admitted' },
  { key: 'succeeded', label: 'Succeeded' },
  { key: 'failed', label: 'Failed' },
] as const;

const WIDTH = 1000;
const HEIGHT = 260;
const MARGIN = { top: 12, right: 12, bottom: 28, left: 44 };
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom;

/** The smallest step of 1, 2 or 5 × 10^k with four steps covering `max`. */
function niceStep(max: number): number {
  const rough = Math.max(max, 1) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= rough) ?? 10 * power;
  return Math.max(1, Math.ceil(step));
}

/**
 * Operations admitted, succeeded and failed per minute as an inline SVG line chart (no chart library): a y axis in
 * whole operations, minute labels along x, and a title and description for screen readers. Zero-filled buckets in,
 * oldest first.
 */
export function ThroughputChart({ buckets }: { readonly buckets: readonly ThroughputBucket[] }) {
  const titleId = useId();
  const descId = useId();
  const max = Math.max(0, ...buckets.flatMap((b) => SERIES.map((s) => b[s.key])));
  const step = niceStep(max);
  const yMax = step * 4;
  const x = (i: number) => MARGIN.left + (buckets.length <= 1 ? PLOT_W / 2 : (i / (buckets.length - 1)) * PLOT_W);
  const y = (v: number) => MARGIN.top + PLOT_H - (v / yMax) * PLOT_H;
  const every = Math.max(1, Math.ceil(buckets.length / 8));
  const totals = SERIES.map((s) => `${s.label.toLowerCase()} ${buckets.reduce((sum, b) => sum + b[s.key], 0)}`).join(', ');
  return html`
    <svg class="chart" viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby=${`${titleId} ${descId}`}>
      <title id=${titleId}>Operations per minute</title>
      <desc id=${descId}>Over ${buckets.length} minutes: ${totals}.</desc>
      ${[0, 1, 2, 3, 4].map(
        (k) => html`<g key=${`y${k}`} class="grid">
          <line x1=${MARGIN.left} x2=${WIDTH - MARGIN.right} y1=${y(k * step)} y2=${y(k * step)} />
          <text x=${MARGIN.left - 6} y=${y(k * step) + 4} text-anchor="end">${k * step}</text>
        </g>`,
      )}
      ${buckets.map((b, i) =>
        i % every === 0 ? html`<text key=${`x${i}`} class="axis" x=${x(i)} y=${HEIGHT - 8} text-anchor="middle">${formatMinute(b.minute)}</text>` : null,
      )}
      ${SERIES.map(
        (s) => html`<polyline key=${s.key} class=${`series series-${s.key}`} points=${buckets.map((b, i) => `${x(i).toFixed(1)},${y(b[s.key]).toFixed(1)}`).join(' ')} />`,
      )}
    </svg>
  `;
}
