import { html } from 'htm/preact';

/** Props of {@link NotOperator}. */
export interface NotOperatorProps {
  readonly sub: string | undefined;
  readonly onSignOut: () => void;
}

/** What a token without `ops:read` sees: no data, an explanation, and a way to sign in with another token. */
export function NotOperator({ sub, onSignOut }: NotOperatorProps) {
  return html`
    <main class="not-operator">
      <h1>Not an operator</h1>
      <p role="alert">
        ${sub ? html`The token of <strong>${sub}</strong>` : 'This token'} has no <code>ops:read</code> scope that the API accepts, so
        the operator API does not exist for it and this console has nothing to show.
      </p>
      <p>Sign in with an operator token: <code>npm run --silent token -- ${'<you>'} --scope ops:read,ops:write</code>.</p>
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </main>
  `;
}
