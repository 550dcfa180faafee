import { html } from 'htm/preact';
import { useErrorBoundary, useState } from 'preact/hooks';
import { clearToken, loadToken, saveToken } from '../auth/token-storage.js';
import { OperatorShell } from './operator-shell.js';
import { SignInForm } from './sign-in-form.js';

/**
 * The console: the sign-in form until a token is pasted, then the operator shell for it. Signing out (or a token the
 * API refuses) forgets the token. A rendering error anywhere below is caught here and shown, never left as a blank
 * page or an uncaught exception.
 */
export function App() {
  const [token, setToken] = useState<string | undefined>(loadToken);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [crash, resetCrash] = useErrorBoundary();

  const signOut = (why?: string) => {
    clearToken();
    setToken(undefined);
    setNotice(why);
  };
  const signIn = (pasted: string) => {
    saveToken(pasted);
    setNotice(undefined);
    setToken(pasted);
  };

  if (crash) {
    return html`
      <main>
        <h1>Something went wrong</h1>
        <p role="alert">The console hit an unexpected error while drawing this page.</p>
        <button type="button" onClick=${resetCrash}>Try again</button>
      </main>
    `;
  }
  if (token === undefined) return html`<${SignInForm} onSignIn=${signIn} notice=${notice} />`;
  return html`<${OperatorShell} key=${token} token=${token} onSignOut=${signOut} />`;
}
