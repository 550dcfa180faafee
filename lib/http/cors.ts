import type { ApiResult } from './route-types.js';

/**
 * Cross-origin resource sharing for the API (Fetch Standard, "CORS protocol"): the one list of what a page on an
 * allowed origin (`CORS_ALLOWED_ORIGINS`) may send and read. Two places answer with it and must agree: the local server
 * (`lib/local/local-http-server.ts`), which plays API Gateway, and API Gateway's own CORS configuration
 * (`serverless.yml`, `resources.extensions.HttpApi`), which answers preflights before the JWT authorizer runs —
 * `test/deploy/serverless-package.test.ts` checks that the template holds exactly these lists.
 *
 * The API authenticates with a bearer token the page sends itself, never a cookie, so no response ever carries
 * `Access-Control-Allow-Credentials`, and an allowed origin is echoed exactly (never `*`).
 */

/** The methods of the API's routes (`API_ROUTES`), for `Access-Control-Allow-Methods`. */
export const CORS_ALLOWED_METHODS: readonly string[] = Object.freeze(['GET', 'POST', 'PATCH']);

/**
 * The request headers a client sends beyond the CORS-safelisted ones, for `Access-Control-Allow-Headers`: the bearer
 * token, a JSON body's type, the admission's `Idempotency-Key` and the status poll's `If-None-Match`.
 */
export const CORS_ALLOWED_HEADERS: readonly string[] = Object.freeze(['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'traceparent', 'tracestate']);

/**
 * The response headers the API sends that are not CORS-safelisted, for `Access-Control-Expose-Headers`, so a page can
 * read them: `Location` (202), `Retry-After` (429), `Idempotent-Replayed` (a replayed key), `ETag` (the status URL),
 * `WWW-Authenticate` (401) and `Allow` (405).
 */
export const CORS_EXPOSED_HEADERS: readonly string[] = Object.freeze(['Location', 'Retry-After', 'Idempotent-Replayed', 'ETag', 'WWW-Authenticate', 'Allow']);

/** How long a browser may reuse a preflight's answer, in **seconds** (`Access-Control-Max-Age`; Chromium caps it at 7200). */
export const CORS_MAX_AGE_SECONDS = 600;

/** Header values as one request carries them: lower-case names (Node and API Gateway HTTP APIs both deliver them so). */
type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The request's `Origin`, when it sent exactly one. */
function originOf(headers: RequestHeaders): string | undefined {
  const origin = headers.origin;
  return typeof origin === 'string' && origin !== '' ? origin : undefined;
}

/**
 * Whether a request is a CORS preflight (Fetch Standard, "CORS-preflight request"): `OPTIONS` with an `Origin` and an
 * `Access-Control-Request-Method`. Any other `OPTIONS` is an ordinary request.
 */
export function isCorsPreflight(method: string, headers: RequestHeaders): boolean {
  return method === 'OPTIONS' && originOf(headers) !== undefined && typeof headers['access-control-request-method'] === 'string';
}

/** `vary` with `Origin` added once (a response whose CORS headers depend on `Origin` must say so, Fetch Standard). */
function varyOrigin(vary: string | undefined): string {
  const names = (vary ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  return names.some((name) => name.toLowerCase() === 'origin' || name === '*') ? names.join(', ') : [...names, 'Origin'].join(', ');
}

/**
 * The answer to a CORS preflight, as API Gateway's CORS configuration gives it: **204**, no body, no token needed.
 * From an origin in `allowedOrigins`: `Access-Control-Allow-Origin: <that origin>`, `Vary: Origin`, and the allowed
 * methods, headers, exposed headers and max age above. From any other origin: still 204, with `Vary: Origin` and **no**
 * `Access-Control-*` header, so the browser refuses the request it was about to send and the server sees none.
 * @param allowedOrigins exact origins (`Config.CORS_ALLOWED_ORIGINS`).
 */
export function corsPreflightResponse(allowedOrigins: readonly string[], headers: RequestHeaders): ApiResult {
  const origin = originOf(headers);
  if (origin === undefined || !allowedOrigins.includes(origin)) return { statusCode: 204, headers: { vary: 'Origin' } };
  return {
    statusCode: 204,
    headers: {
      'access-control-allow-origin': origin,
      vary: 'Origin',
      'access-control-allow-methods': CORS_ALLOWED_METHODS.join(', '),
      'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
      'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    },
  };
}

/**
 * `result` with the CORS headers of an actual (non-preflight) response: for an origin in `allowedOrigins`,
 * `Access-Control-Allow-Origin: <that origin>` and `Access-Control-Expose-Headers`; with any origin list configured,
 * `Vary: Origin` (the answer depends on it). With no list configured, `result` unchanged: same-origin only.
 * @param allowedOrigins exact origins (`Config.CORS_ALLOWED_ORIGINS`).
 */
export function withCorsHeaders(result: ApiResult, allowedOrigins: readonly string[], headers: RequestHeaders): ApiResult {
  if (allowedOrigins.length === 0) return result;
  const own = Object.fromEntries(Object.entries(result.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  const origin = originOf(headers);
  const allowed = origin !== undefined && allowedOrigins.includes(origin);
  return {
    ...result,
    headers: {
      ...own,
      vary: varyOrigin(own.vary === undefined ? undefined : String(own.vary)),
      ...(allowed ? { 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', ') } : {}),
    },
  };
}
