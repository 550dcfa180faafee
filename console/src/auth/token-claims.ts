/** The scope that lets a token read the operator API. */
export const OPS_READ = 'ops:read';

/** The scope that lets a token act through the operator API (cancel, retry, redrive, resolve). */
export const OPS_WRITE = 'ops:write';

/**
 * What the console reads from a token's payload — **unverified**, for the display only: who is signed in, which
 * actions to offer and when the token expires. The API verifies every request itself; a forged claim here only
 * shows buttons that the API then refuses.
 */
export interface TokenClaims {
  readonly sub: string;
  /** From `scope` (space-separated, RFC 8693 §4.2) or `scp` (a list or a string). */
  readonly scopes: ReadonlySet<string>;
  /** Expiry, in **ms** since the epoch; undefined when the token has none. */
  readonly expiresAtMs: number | undefined;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Whether `token` has the shape of a compact JWS (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

function base64UrlJson(part: string): unknown {
  const base64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

function scopesOf(payload: Record<string, unknown>): Set<string> {
  const raw = payload.scope ?? payload.scp;
  const list = typeof raw === 'string' ? raw.split(/\s+/) : Array.isArray(raw) ? raw.filter((s): s is string => typeof s === 'string') : [];
  return new Set(list.filter((scope) => scope !== ''));
}

/**
 * Reads the claims of a JWT without verifying it (see {@link TokenClaims}).
 * @returns undefined when the token is not a JWT or its payload is not a JSON object with a string `sub`.
 */
export function readTokenClaims(token: string): TokenClaims | undefined {
  if (!looksLikeJwt(token)) return undefined;
  try {
    const payload = base64UrlJson(token.split('.')[1] ?? '');
    if (typeof payload !== 'object' || payload === null) return undefined;
    const record = payload as Record<string, unknown>;
    if (typeof record.sub !== 'string' || record.sub === '') return undefined;
    return {
      sub: record.sub.slice(0, 128),
      scopes: scopesOf(record),
      expiresAtMs: typeof record.exp === 'number' ? record.exp * 1000 : undefined,
    };
  } catch {
    return undefined;
  }
}
