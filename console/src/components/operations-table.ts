import { html } from 'htm/preact';
import type { OperatorOperation } from '../api/types.js';
import { formatTime, shortId } from '../format/format.js';
import { consolePath } from '../routing/routes.js';
import { AppLink } from './app-link.js';
import { StatusBadge } from './status-badge.js';

/** A page of operations as a table; each id links to the operation's timeline. */
export function OperationsTable({ operations }: { readonly operations: readonly OperatorOperation[] }) {
  if (operations.length === 0) return html`<p class="empty">No operations match these filters.</p>`;
  return html`
    <table class="operations">
      <caption>Operations, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Operation</th>
          <th scope="col">Task type</th>
          <th scope="col">State</th>
          <th scope="col">Owner</th>
          <th scope="col">Attempt</th>
          <th scope="col">Progress</th>
          <th scope="col">Created</th>
          <th scope="col">Failure</th>
        </tr>
      </thead>
      <tbody>
        ${operations.map(
          (op) => html`
            <tr key=${op.id} data-operation-id=${op.id}>
              <td><${AppLink} href=${consolePath('operations', op.id)}><code title=${op.id}>${shortId(op.id)}</code></${AppLink}></td>
              <td>${op.taskType}</td>
              <td><${StatusBadge} status=${op.status} />${op.cancelRequested && op.status === 'running' ? html` <span class="hint">cancel requested</span>` : null}</td>
              <td>${op.ownerUserId}</td>
              <td class="number">${op.attempt}/${op.maxAttempts}</td>
              <td class="number">${op.progress.percent}%</td>
              <td>${formatTime(op.createdAt)}</td>
              <td>${op.failure ? html`<code>${op.failure.code}</code>` : '–'}</td>
            </tr>
          `,
        )}
      </tbody>
    </table>
  `;
}
