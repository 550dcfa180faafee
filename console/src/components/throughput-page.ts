import { html } from 'htm/preact';
import { useId, useState } from 'preact/hooks';
import { getThroughput } from '../api/operator-api.js';
import type { ThroughputBucket } from '../api/types.js';
import { formatTime } from '../format/format.js';
import { useResource } from '../hooks/use-resource.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { SERIES, ThroughputChart } from './throughput-chart.js';

const WINDOWS = [15, 60, 180, 360, 1440] as const;

const active = (b: ThroughputBucket) => b.admitted + b.succeeded + b.failed + b.cancelled > 0;

/** Throughput over a chosen window: the chart, a legend with totals, and the busy minutes as a table. */
export function ThroughputPage({ api }: PageProps) {
  const [minutes, setMinutes] = useState(60);
  const selectId = useId();
  const report = useResource(`throughput:${minutes}`, () => getThroughput(api, minutes), { refreshMs: 10_000 });
  const buckets = report.data?.buckets ?? [];
  return html`
    <h1>Throughput</h1>
    <div class="filters">
      <div>
        <label for=${selectId}>Window</label>
        <select id=${selectId} value=${String(minutes)} onChange=${(e: Event) => setMinutes(Number((e.currentTarget as HTMLSelectElement).value))}>
          ${WINDOWS.map((w) => html`<option value=${String(w)}>last ${w >= 60 ? `${w / 60} h` : `${w} min`}</option>`)}
        </select>
      </div>
    </div>
    <${ProblemAlert} problem=${report.problem} context="Loading throughput" />
    ${report.loading && !report.data && html`<p role="status">Loading throughput…</p>`}
    ${report.data &&
    html`
      <figure>
        <${ThroughputChart} buckets=${buckets} />
        <figcaption>
          <ul class="legend">
            ${SERIES.map((s) => html`<li><span class=${`swatch series-${s.key}`} aria-hidden="true"></span>${s.label}: ${buckets.reduce((sum, b) => sum + b[s.key], 0)}</li>`)}
            <li>Cancelled: ${buckets.reduce((sum, b) => sum + b.cancelled, 0)}</li>
          </ul>
          Operations per minute (UTC), oldest on the left.
        </figcaption>
      </figure>
      <details>
        <summary>Busy minutes as a table</summary>
        <table>
          <thead><tr><th scope="col">Minute</th><th scope="col">Admitted</th><th scope="col">Succeeded</th><th scope="col">Failed</th><th scope="col">Cancelled</th></tr></thead>
          <tbody>
            ${buckets.filter(active).map(
              (b) => html`<tr key=${b.minute}><td>${formatTime(b.minute)}</td><td class="number">${b.admitted}</td><td class="number">${b.succeeded}</td><td class="number">${b.failed}</td><td class="number">${b.cancelled}</td></tr>`,
            )}
          </tbody>
        </table>
      </details>
    `}
  `;
}
