import { html } from 'htm/preact';
import { humanize } from '../format/format.js';

/** A state (of an operation or a recovery operation) as a coloured label; the colour comes from `state-<name>`. */
export function StatusBadge({ status }: { readonly status: string }) {
  return html`<span class=${`badge state-${status}`}>${humanize(status)}</span>`;
}
