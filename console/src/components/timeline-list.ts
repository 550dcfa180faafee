import { html } from 'htm/preact';
import type { TimelineEvent } from '../api/types.js';
import { cancellerText, formatTime, humanize } from '../format/format.js';
import { StatusBadge } from './status-badge.js';

/** An operation's state changes, oldest first; lease losses and failures stand out. */
export function TimelineList({ events }: { readonly events: readonly TimelineEvent[] }) {
  if (events.length === 0) return html`<p class="empty">No recorded state changes.</p>`;
  return html`
    <ol class="timeline">
      ${events.map(
        (event, index) => html`
          <li key=${index} class=${`event event-${event.kind}`}>
            <time datetime=${event.at}>${formatTime(event.at)}</time>
            <strong class="event-kind">${humanize(event.kind)}</strong>
            <span class="transition">
              ${event.from ? html`<${StatusBadge} status=${event.from} /> → ` : null}<${StatusBadge} status=${event.to} />
            </span>
            <span class="hint">attempt ${event.attempt}, cycle ${event.cycle}</span>
            ${event.failureCode && html`<code>${event.failureCode}</code>`}
            ${event.to === 'cancelled' ? html`<span class="hint" data-testid="cancelled-by">by ${cancellerText(event.cancelledBy)}</span>` : null}
          </li>
        `,
      )}
    </ol>
  `;
}
