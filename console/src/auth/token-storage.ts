/** The sessionStorage key of the signed-in token: it lives as long as the tab, never in localStorage or a cookie. */
const TOKEN_KEY = 'durable-ops.console.token';

/** The token of this tab's session, if one is signed in (and storage is available). */
export function loadToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Keeps `token` for this tab's session. @returns false when the browser refuses storage (the token then lives in memory only). */
export function saveToken(token: string): boolean {
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
    return true;
  } catch {
    return false;
  }
}

/** Forgets the token (sign-out). */
export function clearToken(): void {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Nothing stored, nothing to forget.
  }
}
