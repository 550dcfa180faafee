import { html } from 'htm/preact';
import type { NotificationView } from '../api/types.js';
import { formatTime } from '../format/format.js';
import { StatusBadge } from './status-badge.js';

/** The terminal notifications the owner got for an operation, one per cycle. */
export function NotificationsTable({ notifications }: { readonly notifications: readonly NotificationView[] }) {
  if (notifications.length === 0) return html`<p class="empty">No notifications yet (one is sent when a cycle ends).</p>`;
  return html`
    <table>
      <thead><tr><th scope="col">Cycle</th><th scope="col">State</th><th scope="col">Failure</th><th scope="col">Sent</th></tr></thead>
      <tbody>
        ${notifications.map(
          (n) => html`<tr key=${n.cycle}>
            <td class="number">${n.cycle}</td>
            <td><${StatusBadge} status=${n.status} /></td>
            <td>${n.failureCode ? html`<code>${n.failureCode}</code>` : '–'}</td>
            <td>${formatTime(n.createdAt)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  `;
}
