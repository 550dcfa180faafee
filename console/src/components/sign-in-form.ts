import { html } from 'htm/preact';
import { useId, useState } from 'preact/hooks';
import { looksLikeJwt, readTokenClaims } from '../auth/token-claims.js';

/** Props of {@link SignInForm}. */
export interface SignInFormProps {
  /** Called with the pasted token once it looks usable; the caller keeps it and checks it against the API. */
  readonly onSignIn: (token: string) => void;
  /** Why the previous session ended (a refused or expired token), shown above the form. */
  readonly notice?: string | undefined;
}

/** Why `token` cannot be used, or undefined when it can be tried against the API. */
function tokenProblem(token: string): string | undefined {
  if (token === '') return 'Paste a token first.';
  if (!looksLikeJwt(token)) return 'That is not a token: a token is three base64url parts joined by dots.';
  const claims = readTokenClaims(token);
  if (claims?.expiresAtMs !== undefined && claims.expiresAtMs <= Date.now()) return 'That token has expired: make a new one.';
  return undefined;
}

/**
 * Sign-in: paste a bearer token made with `npm run token`. The token is kept in this tab's sessionStorage only and is
 * never shown again.
 */
export function SignInForm({ onSignIn, notice }: SignInFormProps) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const fieldId = useId();
  const helpId = useId();
  const errorId = useId();
  const onSubmit = (event: Event) => {
    event.preventDefault();
    const trimmed = token.trim().replace(/^Bearer\s+/i, '');
    const problem = tokenProblem(trimmed);
    setError(problem);
    if (problem === undefined) onSignIn(trimmed);
  };
  return html`
    <main class="sign-in">
      <h1>durable-ops operator console</h1>
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      <form onSubmit=${onSubmit} novalidate>
        <label for=${fieldId}>Bearer token</label>
        <textarea
          id=${fieldId}
          name="token"
          rows="4"
          autocomplete="off"
          spellcheck=${false}
          aria-describedby=${error ? `${helpId} ${errorId}` : helpId}
          aria-invalid=${error ? 'true' : undefined}
          value=${token}
          onInput=${(event: Event) => setToken((event.currentTarget as HTMLTextAreaElement).value)}
        ></textarea>
        <p id=${helpId} class="help">
          Make one with <code>npm run --silent token -- ${'<you>'} --scope ops:read,ops:write</code>. It is kept in this tab only
          (sessionStorage) until you sign out or close the tab.
        </p>
        ${error && html`<p id=${errorId} class="field-error" role="alert">${error}</p>`}
        <button type="submit">Sign in</button>
      </form>
    </main>
  `;
}
