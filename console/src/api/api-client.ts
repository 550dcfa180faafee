import { ApiError, problemFromBody } from './problem.js';

/** Query parameters; `undefined` and empty strings are left out. */
export type Query = Readonly<Record<string, string | number | undefined>>;

/** A client of the project's own HTTP API, authenticated with one bearer token. */
export interface ApiClient {
  /** GETs `path` (relative, `/api/...`) and returns its JSON body. @throws {ApiError} for any failure. */
  get<T>(path: string, query?: Query): Promise<T>;
  /** POSTs `body` as JSON (or nothing) to `path` and returns its JSON body. @throws {ApiError} for any failure. */
  post<T>(path: string, body?: unknown): Promise<T>;
}

/** Options of {@link createApiClient}. */
export interface ApiClientOptions {
  /** The bearer token, sent as `Authorization: Bearer <token>` and nowhere else. */
  readonly token: string;
  /** Called when the API answers 401 (the token is missing, invalid or expired), before the error is thrown. */
  readonly onUnauthorized?: () => void;
  /** @default the page's `fetch` */
  readonly fetch?: typeof fetch;
}

/** `path` with the non-empty `query` parameters appended. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const search = params.toString();
  return search === '' ? path : `${path}?${search}`;
}

async function readJson(response: Response): Promise<unknown> {
  const type = response.headers.get('content-type') ?? '';
  if (!/json/i.test(type)) return undefined;
  try {
    return await response.json();
  } catch {
    return undefined;
  }
}

/**
 * Creates an {@link ApiClient}. Only relative `/api/...` paths are accepted, so the token never leaves for another
 * origin. Every failure becomes an {@link ApiError}: the API's problem+json body when it sent one, otherwise a
 * problem describing the HTTP status, an unreachable API (`network_error`) or an answer that is not JSON
 * (`invalid_response`).
 */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    if (!path.startsWith('/api/')) throw new Error(`Refusing to call ${path}: only /api/ paths are allowed.`);
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${options.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await doFetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch {
      throw new ApiError({ status: 0, title: 'API unreachable', detail: 'The request did not reach the API. Is the server running?', code: 'network_error', errors: [] });
    }
    const json = await readJson(response);
    if (!response.ok) {
      if (response.status === 401) options.onUnauthorized?.();
      throw new ApiError(problemFromBody(response.status, json));
    }
    if (json === undefined) {
      throw new ApiError({ status: response.status, title: 'Unexpected answer', detail: 'The API answered with something other than JSON.', code: 'invalid_response', errors: [] });
    }
    return json as T;
  }
  return {
    get: (path, query) => request('GET', withQuery(path, query)),
    post: (path, body) => request('POST', path, body),
  };
}
