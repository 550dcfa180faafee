import { html } from 'htm/preact';
import { getCapacity } from '../api/operator-api.js';
import type { CapacityPool } from '../api/types.js';
import { useResource } from '../hooks/use-resource.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { UsageBar } from './usage-bar.js';

const KINDS = [
  { kind: 'global', title: 'Global pool', note: 'Every active operation holds one slot.' },
  { kind: 'route', title: 'Model route pools', note: 'A running model call holds one slot of its route.' },
  { kind: 'owner', title: 'Owner pools', note: 'The owners holding the most slots (at most 50).' },
] as const;

/** Capacity pools by kind, each with a usage bar; refreshed every few seconds. */
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
  `;
}
