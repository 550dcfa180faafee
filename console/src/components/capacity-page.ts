import { html } from 'htm/preact';
import { getCapacity } from '../api/operator-api.js';
import type { CapacityPool, RunningTotal } from '../api/types.js';
import { useResource } from '../hooks/use-resource.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { UsageBar } from './usage-bar.js';

const KINDS = [
  { kind: 'global', title: 'Global pool', note: 'Every active operation holds one slot.' },
  { kind: 'route', title: 'Model route pools', note: 'A running model call holds one slot of its route.' },
  { kind: 'owner', title: 'Owner pools', note: 'The owners holding the most slots (at most 50).' },
  {
    kind: 'running',
    title: 'Running per owner',
    note: 'Running attempts of one owner and task type against the owner’s running limit: the owners running the most (at most 50).',
  },
] as const;

/** Everyone's running attempts per task type, most first: what the 50 listed running pools leave out counts too. */
function RunningTotals({ totals }: { readonly totals: readonly RunningTotal[] }) {
  if (totals.length === 0) return html`<p class="empty">Nothing running.</p>`;
  return html`
    <div class="scroll">
      <table class="running-totals">
        <caption>Running attempts per task type, most first</caption>
        <thead>
          <tr>
            <th scope="col">Task type</th>
            <th scope="col" class="number">Running</th>
            <th scope="col" class="number">Owners</th>
          </tr>
        </thead>
        <tbody>
          ${totals.map(
            (total) => html`<tr key=${total.taskType}>
              <td><code>${total.taskType}</code></td>
              <td class="number">${total.running}</td>
              <td class="number">${total.owners}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `;
}

/** Capacity pools by kind, each with a usage bar, and the running attempts per task type; refreshed every few seconds. */
export function CapacityPage({ api }: PageProps) {
  const capacity = useResource('capacity', () => getCapacity(api), { refreshMs: 5000 });
  const pools = capacity.data?.pools ?? [];
  return html`
    <h1>Capacity</h1>
    <${ProblemAlert} problem=${capacity.problem} context="Loading capacity" />
    ${capacity.loading && !capacity.data && html`<p role="status">Loading capacity…</p>`}
    ${capacity.data &&
    KINDS.map(({ kind, title, note }) => {
      const ofKind = pools.filter((pool: CapacityPool) => pool.kind === kind);
      return html`
        <section key=${kind} aria-label=${title}>
          <h2>${title}</h2>
          <p class="hint">${note}</p>
          ${ofKind.length === 0
            ? html`<p class="empty">None.</p>`
            : html`<ul class="pools">
                ${ofKind.map((pool) => html`<li key=${pool.poolKey}><${UsageBar} label=${pool.poolKey} used=${pool.held} total=${pool.slots} /></li>`)}
              </ul>`}
        </section>
      `;
    })}
    ${capacity.data &&
    html`
      <section aria-label="Running by task type">
        <h2>Running by task type</h2>
        <p class="hint">Every owner’s running attempts summed per task type.</p>
        <${RunningTotals} totals=${capacity.data.runningByTaskType ?? []} />
      </section>
    `}
  `;
}
