import { html } from 'htm/preact';
import { listSweeps } from '../api/operator-api.js';
import { useResource } from '../hooks/use-resource.js';
import { DlqRedrive } from './dlq-redrive.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { SweepsTable } from './sweeps-table.js';

/** The sweeper's latest runs with their counts, and (with `ops:write`) the dead-letter queue redrive. */
export function SweeperPage({ api, canWrite }: PageProps) {
  const sweeps = useResource('sweeps', () => listSweeps(api), { refreshMs: 10_000 });
  return html`
    <h1>Sweeper & DLQ</h1>
    ${canWrite && html`<${DlqRedrive} api=${api} />`}
    <section aria-labelledby="sweeps-heading">
      <h2 id="sweeps-heading">Sweeper runs</h2>
      <p class="hint">Each run expires leases, fails operations past their deadline, re-sends wake-ups, purges old rows and frees leaked capacity.</p>
      <${ProblemAlert} problem=${sweeps.problem} context="Loading sweeper runs" />
      ${sweeps.loading && !sweeps.data && html`<p role="status">Loading sweeper runs…</p>`}
      ${sweeps.data && html`<${SweepsTable} runs=${sweeps.data.items} />`}
    </section>
  `;
}
