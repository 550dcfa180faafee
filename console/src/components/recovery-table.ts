import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ApiClient } from '../api/api-client.js';
import type { RecoveryItem } from '../api/types.js';
import { formatTime, humanize, shortId } from '../format/format.js';
import { ChainStatusCell } from './chain-status-cell.js';
import { ResolveUnknownForm } from './resolve-unknown-form.js';
import { StatusBadge } from './status-badge.js';

/** Props of {@link RecoveryTable}. */
export interface RecoveryTableProps {
  readonly api: ApiClient;
  readonly canWrite: boolean;
  readonly items: readonly RecoveryItem[];
  readonly onChanged: () => void;
}

/** The unresolved recovery operations; an `outcome_unknown` one can be resolved (with `ops:write`) in a form below its row. */
export function RecoveryTable({ api, canWrite, items, onChanged }: RecoveryTableProps) {
  const [resolving, setResolving] = useState<string | undefined>(undefined);
  const [resolved, setResolved] = useState<{ id: string; state: string } | undefined>(undefined);
  const notice = resolved && html`<p class="notice" role="status">Resolved <code>${resolved.id}</code>: it is now <strong>${humanize(resolved.state)}</strong>.</p>`;
  if (items.length === 0) return html`${notice}<p class="empty">Nothing to recover: no unresolved recovery operations.</p>`;
  return html`
    ${notice}
    <table class="recovery">
      <caption>Unresolved recovery operations, oldest first</caption>
      <thead>
        <tr>
          <th scope="col">Operation</th>
          <th scope="col">Module / kind</th>
          <th scope="col">State</th>
          <th scope="col">Effect class</th>
          <th scope="col">Chain</th>
          <th scope="col">Fence</th>
          <th scope="col">Lease</th>
          <th scope="col">Reconciliation</th>
          ${canWrite && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}
        </tr>
      </thead>
      <tbody>
        ${items.map(
          (item) => html`
            <tr key=${item.id}>
              <td><code title=${item.id}>${shortId(item.id)}</code><br /><span class="hint">since ${formatTime(item.createdAt)}</span></td>
              <td>${item.module}<br /><span class="hint">${item.kind}</span></td>
              <td><${StatusBadge} status=${item.state} /></td>
              <td>${item.effectClass}</td>
              <td><${ChainStatusCell} chain=${item.chain} checkpoints=${item.checkpointCount} /></td>
              <td class="number">${item.fence}</td>
              <td>${item.stale ? html`<span class="warn">stale</span>` : 'held'}<br /><span class="hint">${formatTime(item.leaseExpiresAt)}</span></td>
              <td class="reconciliation">${item.reconciliation}</td>
              ${canWrite &&
              html`<td>
                ${item.state === 'outcome_unknown' &&
                html`<button type="button" aria-expanded=${resolving === item.id} onClick=${() => {
                    setResolved(undefined);
                    setResolving(resolving === item.id ? undefined : item.id);
                  }}>
                  Resolve…
                </button>`}
              </td>`}
            </tr>
            ${resolving === item.id &&
            html`<tr key=${`${item.id}-resolve`} class="resolve-row">
              <td colspan="9">
                <${ResolveUnknownForm}
                  api=${api}
                  item=${item}
                  onResolved=${(state: string) => {
                    setResolving(undefined);
                    setResolved({ id: item.id, state });
                    onChanged();
                  }}
                  onClose=${() => setResolving(undefined)}
                />
              </td>
            </tr>`}
          `,
        )}
      </tbody>
    </table>
  `;
}
