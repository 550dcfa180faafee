import { html } from 'htm/preact';
import { consolePath, type Route } from '../routing/routes.js';
import { AppLink } from './app-link.js';

const SECTIONS = [
  { page: 'operations', label: 'Operations', href: consolePath('operations') },
  { page: 'capacity', label: 'Capacity', href: consolePath('capacity') },
  { page: 'recovery', label: 'Recovery', href: consolePath('recovery') },
  { page: 'sweeper', label: 'Sweeper & DLQ', href: consolePath('sweeper') },
  { page: 'throughput', label: 'Throughput', href: consolePath('throughput') },
] as const;

/** The console's sections; the one shown (an operation's page belongs to Operations) is marked current. */
export function NavBar({ route }: { readonly route: Route }) {
  const active = route.page === 'operation' ? 'operations' : route.page;
  return html`
    <nav aria-label="Sections">
      <ul>
        ${SECTIONS.map((section) => html`<li><${AppLink} href=${section.href} current=${section.page === active}>${section.label}</${AppLink}></li>`)}
      </ul>
    </nav>
  `;
}
