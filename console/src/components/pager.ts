import { html } from 'htm/preact';
import { AppLink } from './app-link.js';

/** Props of {@link Pager}: each link is shown only when there is such a page. */
export interface PagerProps {
  readonly firstHref: string | undefined;
  readonly nextHref: string | undefined;
}

/** Cursor paging: back to the newest page, or on to the next (older) one. */
export function Pager({ firstHref, nextHref }: PagerProps) {
  if (!firstHref && !nextHref) return null;
  return html`
    <nav class="pager" aria-label="Pages">
      ${firstHref && html`<${AppLink} href=${firstHref}>← Newest</${AppLink}>`}
      ${nextHref && html`<${AppLink} href=${nextHref}>Older →</${AppLink}>`}
    </nav>
  `;
}
