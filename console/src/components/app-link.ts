import type { ComponentChildren } from 'preact';
import { html } from 'htm/preact';
import { navigate } from '../routing/navigation.js';

/** Props of {@link AppLink}. */
export interface AppLinkProps {
  readonly href: string;
  readonly current?: boolean;
  readonly children: ComponentChildren;
}

/**
 * A link inside the console: a real `<a href>` (so it can be opened in a new tab or copied) that, on a plain click,
 * changes the page without a reload. `current` marks the page being shown (`aria-current="page"`).
 */
export function AppLink({ href, current, children }: AppLinkProps) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return html`<a href=${href} onClick=${onClick} aria-current=${current ? 'page' : undefined}>${children}</a>`;
}
