import { html } from 'htm/preact';
import type { TokenClaims } from '../auth/token-claims.js';
import { NavBar } from './nav-bar.js';
import type { Route } from '../routing/routes.js';

/** Props of {@link HeaderBar}. */
export interface HeaderBarProps {
  readonly claims: TokenClaims | undefined;
  readonly route: Route;
  readonly onSignOut: () => void;
}

/** The console's banner: its name, the sections, who is signed in with which operator scopes, and sign-out. */
export function HeaderBar({ claims, route, onSignOut }: HeaderBarProps) {
  const scopes = claims ? [...claims.scopes].filter((scope) => scope.startsWith('ops:')).sort() : [];
  return html`
    <header class="header">
      <p class="brand">durable-ops console</p>
      <${NavBar} route=${route} />
      <div class="who">
        <span>Signed in as <strong>${claims?.sub ?? 'unknown'}</strong></span>
        ${scopes.map((scope) => html`<span class="scope">${scope}</span>`)}
        <button type="button" onClick=${onSignOut}>Sign out</button>
      </div>
    </header>
  `;
}
