import { html } from 'htm/preact';
import type { SweepRun } from '../api/types.js';
import { formatDuration, formatTime } from '../format/format.js';

/** The counts of a sweep, in the order the sweeper runs its passes; any other count the API adds follows. */
const KNOWN_COUNTS: ReadonlyArray<readonly [string, string]> = [
  ['leasesRetried', 'Leases retried'],
  ['leasesFailed', 'Leases failed'],
  ['leasesCancelled', 'Leases cancelled'],
  ['deadlinesFailed', 'Deadlines failed'],
  ['wakeupsSent', 'Wake-ups sent'],
  ['purged', 'Purged'],
  ['capacityReclaimed', 'Capacity reclaimed'],
  ['budgetExhausted', 'Budget exhausted'],
];

function columnsOf(runs: readonly SweepRun[]): ReadonlyArray<readonly [string, string]> {
  const extra = [...new Set(runs.flatMap((run) => Object.keys(run.counts)))].filter((key) => !KNOWN_COUNTS.some(([k]) => k === key));
  return [...KNOWN_COUNTS, ...extra.sort().map((key) => [key, key] as const)];
}

/** A run's counts by name, so a count this console does not know yet still shows (`undefined` when the run lacks it). */
function countsOf(run: SweepRun): Readonly<Record<string, number | boolean | undefined>> {
  return run.counts;
}

function cell(value: number | boolean | undefined) {
  if (typeof value === 'boolean') return value ? html`<span class="warn">yes</span>` : 'no';
  if (value === undefined) return '–';
  return value === 0 ? html`<span class="zero">0</span>` : html`<strong>${value}</strong>`;
}

/** Sweeper runs, newest first, one column per count. */
export function SweepsTable({ runs }: { readonly runs: readonly SweepRun[] }) {
  if (runs.length === 0) return html`<p class="empty">No sweeper runs recorded yet.</p>`;
  const columns = columnsOf(runs);
  return html`
    <div class="scroll">
      <table class="sweeps">
        <caption>Sweeper runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Took</th>
            ${columns.map(([, label]) => html`<th scope="col" class="number">${label}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${runs.map(
            (run, index) => html`<tr key=${index}>
              <td>${formatTime(run.startedAt)}</td>
              <td class="number">${formatDuration(run.startedAt, run.finishedAt)}</td>
              ${columns.map(([key]) => html`<td class="number">${cell(countsOf(run)[key])}</td>`)}
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `;
}
