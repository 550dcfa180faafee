import { html } from 'htm/preact';
import { useMemo } from 'preact/hooks';
import { createApiClient } from '../api/api-client.js';
import { probeOperatorAccess } from '../api/operator-api.js';
import { OPS_READ, OPS_WRITE, readTokenClaims } from '../auth/token-claims.js';
import { useResource } from '../hooks/use-resource.js';
import { useRoute } from '../routing/navigation.js';
import { HeaderBar } from './header-bar.js';
import { NotOperator } from './not-operator.js';
import { PageView } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';

/** Props of {@link OperatorShell}. */
export interface OperatorShellProps {
  readonly token: string;
  /** Forgets the token; `why` is shown on the sign-in form. */
  readonly onSignOut: (why?: string) => void;
}

const REFUSED = 'The API refused the token (missing, invalid or expired). Sign in again.';

/**
 * Everything behind sign-in. A token whose claims lack `ops:read` sees {@link NotOperator} without a single API
 * call. Otherwise the API decides: one operator read, and a 404 (the operator API is invisible to non-operators) also
 * shows {@link NotOperator}. Actions are offered only when the claims hold `ops:write`; the API checks again.
 */
export function OperatorShell({ token, onSignOut }: OperatorShellProps) {
  const claims = useMemo(() => readTokenClaims(token), [token]);
  const api = useMemo(() => createApiClient({ token, onUnauthorized: () => onSignOut(REFUSED) }), [token]);
  const route = useRoute();
  const claimsDenyRead = claims !== undefined && !claims.scopes.has(OPS_READ);
  const access = useResource(claimsDenyRead ? 'skip' : 'probe', () => (claimsDenyRead ? Promise.resolve(false) : probeOperatorAccess(api)));

  if (claimsDenyRead || access.data === false) return html`<${NotOperator} sub=${claims?.sub} onSignOut=${() => onSignOut()} />`;
  if (access.data === undefined) {
    return html`
      <main>
        ${access.loading ? html`<p role="status">Checking operator access…</p>` : html`<${ProblemAlert} problem=${access.problem} context="Checking operator access" />`}
        <button type="button" onClick=${() => onSignOut()}>Sign out</button>
      </main>
    `;
  }
  return html`
    <${HeaderBar} claims=${claims} route=${route} onSignOut=${() => onSignOut()} />
    <main>
      <${PageView} route=${route} api=${api} canWrite=${claims?.scopes.has(OPS_WRITE) ?? false} />
    </main>
  `;
}
