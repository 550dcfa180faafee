import { html } from 'htm/preact';
import { useId, useState } from 'preact/hooks';
import { listRecovery } from '../api/operator-api.js';
import { useResource } from '../hooks/use-resource.js';
import { humanize } from '../format/format.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { RecoveryTable } from './recovery-table.js';

/** The filters of `GET /api/ops/recovery` (`running` lists only stale running operations). */
const STATES = ['recovery_required', 'recovering', 'outcome_unknown', 'running'] as const;

/** Unresolved durable recovery operations, oldest first, with their chain verification and, for operators who may write, resolution. */
export function RecoveryPage({ api, canWrite }: PageProps) {
  const [state, setState] = useState('');
  const selectId = useId();
  const list = useResource(`recovery:${state}`, () => listRecovery(api, state || undefined), { refreshMs: 10_000 });
  return html`
    <h1>Recovery</h1>
    <p class="hint">Durable recovery operations that need an operator: interrupted effects, oldest first.</p>
    <div class="filters">
      <div>
        <label for=${selectId}>State</label>
        <select id=${selectId} value=${state} onChange=${(event: Event) => setState((event.currentTarget as HTMLSelectElement).value)}>
          <option value="">every unresolved state</option>
          ${STATES.map((s) => html`<option value=${s}>${s === 'running' ? 'running (stale)' : humanize(s)}</option>`)}
        </select>
      </div>
    </div>
    <${ProblemAlert} problem=${list.problem} context="Loading recovery operations" />
    ${list.loading && !list.data && html`<p role="status">Loading recovery operations…</p>`}
    ${list.data && html`<${RecoveryTable} api=${api} canWrite=${canWrite} items=${list.data.items} onChanged=${list.reload} />`}
  `;
}
