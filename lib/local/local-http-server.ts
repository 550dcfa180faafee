import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from 'aws-lambda';
import { UnauthorizedError } from '../errors.js';
import type { Logger } from '../logger.js';
import { isPublicRequest } from '../http/api-handler.js';
import { corsPreflightResponse, isCorsPreflight, withCorsHeaders } from '../http/cors.js';
import { ClientAbortedError, ContentTooLargeError, MethodNotAllowedError, RouteNotFoundError } from '../http/http-errors.js';
import { problemResponse } from '../http/problem-details.js';
import type { ApiEvent, ApiResult } from '../http/route-types.js';
import { verifyDevToken, type DevTokenClaims } from './dev-token.js';
import { localLambdaContext } from './lambda-context.js';
import { toApiGatewayEvent } from './local-api-event.js';
import { assertLocalHost } from './local-host.js';

/** Largest request body the local server accepts, in **bytes** (1 MiB); larger ones get 413 before reaching the handler. */
export const LOCAL_MAX_BODY_BYTES = 1024 * 1024;

/**
 * How much of a refused body the server still reads and throws away after its 413, in **bytes** (64 MiB), before it
 * closes the connection. Closing a socket with unread data resets it (RFC 9293 §3.6.1), and a client still sending gets
 * a broken pipe — often before it has read the 413 — so the rest is drained, up to this much, then the connection closes.
 */
const LOCAL_DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/** Time each local invocation gets, in **ms**: just under API Gateway's 30 s integration timeout. */
const LOCAL_INVOCATION_TIMEOUT_MS = 29_000;

/** The handler the local server fronts: the same one the API Lambda exports. */
export type LocalApiHandler = (event: ApiEvent, context: Context) => Promise<ApiResult>;

/** Options of {@link startLocalHttpServer}. */
export interface LocalHttpServerOptions {
  /** TCP port; `0` picks a free one (tests). */
  readonly port: number;
  /** Interface to listen on. @default '127.0.0.1' (never exposed to the network by default) */
  readonly host?: string;
  readonly handler: LocalApiHandler;
  /** HS256 secret that dev tokens are verified with (`DEV_JWT_SECRET`). */
  readonly devJwtSecret: string;
  readonly logger: Logger;
  /**
   * The built operator console served at `/console` (`npm run build:console`).
   * @default the repository's `dist/console`
   */
  readonly consoleDir?: string;
  /**
   * Origins whose pages may call `/api` from a browser (`CORS_ALLOWED_ORIGINS`, `lib/http/cors.ts`): their preflights
   * are answered 204 without a token, and every `/api` answer to them carries `Access-Control-Allow-Origin`.
   * @default none: no CORS headers at all (same-origin only)
   */
  readonly corsAllowedOrigins?: readonly string[];
  /**
   * Host names, besides the loopback ones, that requests may name in `Host` (`LOCAL_ALLOWED_HOSTS`, `assertLocalHost`):
   * listening on `0.0.0.0` reaches the machine's other names only once they are listed here.
   * @default none: `localhost`, `127.0.0.1`, `[::1]` and `*.localhost` only
   */
  readonly allowedHosts?: readonly string[];
}

/** A running local HTTP server. */
export interface LocalHttpServer {
  /** Base URL, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** The port actually bound (useful with `port: 0`). */
  readonly port: number;
  /** Stops listening and closes every open connection. */
  close(): Promise<void>;
}

/** The plain-text answer of `GET /`: how to get a token and call the API at `baseUrl`. */
function hint(baseUrl: string): string {
  return [
    'durable-ops local API',
    '',
    'Get a dev token:  TOKEN=$(npm run --silent token -- <user-id> [--scope a,b] [--expires-in 12h])',
    `Call the API:     curl -H "Authorization: Bearer $TOKEN" ${baseUrl}/api/operations`,
    `OpenAPI 3.1:      curl ${baseUrl}/api/openapi.json   (no token needed)`,
    `Operator console: ${baseUrl}/console   (sign in with a token holding --scope ops:read,ops:write)`,
    '',
  ].join('\n');
}

/** Where the operator console is served; every path under it that is not a file is one of its client routes. */
const CONSOLE_PREFIX = '/console';

/** The repository's built console: `npm run build:console` (and `npm start`) write it. */
const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../dist/console', import.meta.url));

/** Content types of the files a Vite build writes; anything else is served as `application/octet-stream`. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Headers of every console file: a strict Content-Security-Policy (only this origin's scripts, styles and API; no
 * inline script, no eval, no framing) — the page holds a bearer token — no MIME sniffing, no referrer.
 */
const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** The body of every `/console` request while `dist/console` has no `index.html`. */
const NOT_BUILT =
  'The operator console is not built. Run `npm run build:console` (npm start builds it), then reload.\n';

/** `/console` itself or anything below it (not `/consoles`). */
function isConsolePath(path: string): boolean {
  return path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`);
}

/** The file at `path`, or undefined when there is none (or it is a directory). */
async function readFileIfAny(path: string): Promise<Buffer | undefined> {
  try {
    return (await stat(path)).isFile() ? await readFile(path) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Answers `GET`/`HEAD` under `/console` from the built console in `dir`: the file the path names, with its content type;
 * `index.html` for any other path without a file extension (the console's client routes, e.g.
 * `/console/operations/<id>`); 404 for a missing asset. A path that leaves `dir` once decoded (`..`, `%2e%2e`, a
 * backslash, a NUL, a dot-file) is a 404 before the file system is asked. Hashed assets (`/console/assets/…`) are
 * cacheable for a year; everything else is revalidated.
 * @throws {MethodNotAllowedError} for any other method (405, `Allow: GET, HEAD`).
 * @throws {RouteNotFoundError} for a missing asset or a path outside `dir`.
 */
async function serveConsole(method: string, path: string, dir: string): Promise<ApiResult> {
  if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowedError(['GET', 'HEAD']);
  const root = resolve(dir);
  const index = await readFileIfAny(resolve(root, 'index.html'));
  if (index === undefined) {
    return { statusCode: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, body: NOT_BUILT };
  }
  let segments: string[];
  try {
    segments = decodeURIComponent(path.slice(CONSOLE_PREFIX.length)).split('/').filter((segment) => segment !== '');
  } catch {
    throw new RouteNotFoundError();
  }
  if (segments.some((segment) => segment.startsWith('.') || segment.includes('\\') || segment.includes('\0'))) throw new RouteNotFoundError();
  const target = resolve(root, ...segments);
  if (!target.startsWith(`${root}${sep}`) && target !== root) throw new RouteNotFoundError();
  const last = segments.at(-1) ?? '';
  const file = segments.length > 0 ? await readFileIfAny(target) : undefined;
  if (file === undefined && extname(last) !== '') throw new RouteNotFoundError();
  const [body, type] = file === undefined ? [index, '.html'] : [file, extname(last).toLowerCase()];
  const cacheable = file !== undefined && segments[0] === 'assets';
  return {
    statusCode: 200,
    headers: {
      ...CONSOLE_HEADERS,
      'content-type': CONTENT_TYPES[type] ?? 'application/octet-stream',
      'content-length': String(body.byteLength),
      'cache-control': cacheable ? 'public, max-age=31536000, immutable' : 'no-cache',
    },
    ...(method === 'HEAD' ? {} : { body: body.toString('base64'), isBase64Encoded: true }),
  };
}

/**
 * The part of the API Gateway JWT authorizer the local server plays: a `Bearer` token verified as a dev token.
 * @throws {UnauthorizedError} when the header is missing or malformed, or the token fails verification.
 */
async function authorize(authorization: string | undefined, secret: string): Promise<DevTokenClaims> {
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/i.exec(authorization ?? '');
  if (!match?.[1]) throw new UnauthorizedError('An Authorization: Bearer token is required.');
  return verifyDevToken(match[1], secret);
}

/** Whether `length` (a `Content-Length` header) declares more than `limit` bytes. */
function declaresMoreThan(length: string | undefined, limit: number): boolean {
  return length !== undefined && Number(length) > limit;
}

/**
 * Reads the body as UTF-8 text, refusing more than `limit` bytes actually sent (a chunked body has no length to check
 * up front). At the first chunk past the limit it stops reading — the request is paused, never destroyed, so the 413
 * can still be written on its connection.
 * @throws {ContentTooLargeError} past the limit; the rest of the body is never buffered.
 * @throws {ClientAbortedError} when the client closes or resets the connection before the body ends.
 */
function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (outcome: () => void) => {
      request.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= limit) chunks.push(chunk);
      else settle(() => (request.pause(), reject(new ContentTooLargeError(limit))));
    };
    const onEnd = () => settle(() => resolve(size === 0 ? undefined : Buffer.concat(chunks).toString('utf8')));
    const onError = (error: Error) => settle(() => reject(new ClientAbortedError({ cause: error })));
    const onClose = () => settle(() => reject(new ClientAbortedError()));
    // Gone already (while the token was being checked): no event would come.
    if (request.destroyed) reject(new ClientAbortedError());
    else request.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/** The result's headers with lower-case names, as `writeHead` takes them. */
function headersOf(result: ApiResult): Record<string, string> {
  return Object.fromEntries(Object.entries(result.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]));
}

function writeResult(response: ServerResponse, result: ApiResult): void {
  response.writeHead(result.statusCode ?? 200, { ...headersOf(result), ...(result.cookies?.length ? { 'set-cookie': result.cookies } : {}) });
  response.end(result.body === undefined ? undefined : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}

/**
 * Writes a 413 for a body that was not read (or not read to its end), then closes the connection without resetting it:
 * the whole answer, with its `Content-Length` and `Connection: close`, goes out at once — so the client has it while it
 * may still be sending — then the rest of the body is read and dropped, up to {@link LOCAL_DRAIN_MAX_BYTES}, and only
 * when it ends is the response ended and the connection closed. Past that bound the socket is destroyed.
 */
function writeResultThenClose(request: IncomingMessage, response: ServerResponse, result: ApiResult): void {
  const body = Buffer.from(result.body ?? '', 'utf8');
  response.writeHead(result.statusCode ?? 413, { ...headersOf(result), 'content-length': String(body.byteLength), connection: 'close' });
  response.write(body);
  if (request.readableEnded) {
    response.end();
    return;
  }
  let drained = 0;
  request.on('data', (chunk: Buffer) => {
    drained += chunk.byteLength;
    if (drained > LOCAL_DRAIN_MAX_BYTES) request.socket.destroy();
  });
  request.once('end', () => response.end());
  // A client that gives up mid-body already has the answer; nothing is left to end.
  request.once('error', () => response.destroy());
  request.resume();
}

/** `/api` itself or anything below it: the paths API Gateway fronts in AWS. */
function isApiPath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/');
}

async function invoke(request: IncomingMessage, options: LocalHttpServerOptions): Promise<ApiResult> {
  // Before anything else — the hint, the console, CORS, the token: a page under a foreign name gets nothing from here.
  assertLocalHost(request.headers.host, options.allowedHosts ?? []);
  const target = request.url ?? '/';
  const path = target.split('?')[0] ?? '/';
  if (request.method === 'GET' && path === '/') {
    const body = hint(`http://${request.headers.host ?? 'localhost'}`);
    return { statusCode: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, body };
  }
  if (isConsolePath(path)) return serveConsole(request.method ?? 'GET', path, options.consoleDir ?? DEFAULT_CONSOLE_DIR);
  if (!isApiPath(path)) throw new RouteNotFoundError();
  // As API Gateway's CORS configuration does: every preflight is answered here, before the authorizer, never by the handler.
  const cors = options.corsAllowedOrigins ?? [];
  if (cors.length > 0 && isCorsPreflight(request.method ?? '', request.headers)) return corsPreflightResponse(cors, request.headers);
  // A declared length over the cap is refused before the token is checked or a byte of the body is read.
  if (declaresMoreThan(request.headers['content-length'], LOCAL_MAX_BODY_BYTES)) throw new ContentTooLargeError(LOCAL_MAX_BODY_BYTES);
  // As API Gateway does for a route deployed without the authorizer: no token asked, none verified, no claims passed.
  const claims = isPublicRequest(request.method ?? 'GET', path) ? undefined : await authorize(request.headers.authorization, options.devJwtSecret);
  const body = await readBody(request, LOCAL_MAX_BODY_BYTES);
  const requestId = randomUUID();
  const event = toApiGatewayEvent(
    {
      method: request.method ?? 'GET',
      target,
      headers: request.headers,
      body,
      sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
      requestId,
      receivedAt: new Date(),
    },
    claims,
  );
  return options.handler(event, localLambdaContext({ functionName: 'durable-ops-api-local', requestId, timeoutMs: LOCAL_INVOCATION_TIMEOUT_MS }));
}

/**
 * Starts the local stand-in for API Gateway (docs/design.md §9): a `node:http` server that, for every `/api/*` request,
 * verifies the `Authorization: Bearer` dev token (HS256, `devJwtSecret`) and answers **401** problem+json itself when
 * it is missing or invalid — never calling the handler, as the JWT authorizer would; public routes (the OpenAPI
 * document, `GET /api/openapi.json`) pass without a token and without claims, as API Gateway deploys them — caps bodies at
 * {@link LOCAL_MAX_BODY_BYTES} (**413**: a larger `Content-Length` before the token is checked or the body read, a
 * larger chunked body as soon as it passes the cap; the connection is then drained and closed, see
 * `writeResultThenClose`), turns the request into a payload 2.0 event carrying the verified claims,
 * calls `handler`, and writes its status, headers and body back. With `corsAllowedOrigins`, it also plays API Gateway's
 * CORS configuration (`lib/http/cors.ts`): a preflight to `/api/*` is answered 204 without a token (CORS headers only for
 * a listed origin), and `/api` answers to a listed origin carry `Access-Control-Allow-Origin`. `GET /` answers a plain-text hint on getting a
 * token; `GET /console` and `/console/*` serve the built operator console from `consoleDir` (`index.html` for its client
 * routes; a plain-text 404 when it is not built; no token needed — the page asks for one and calls `/api` with it);
 * other paths outside `/api` answer 404.
 *
 * Before any of that, every request — `/`, `/console`, `/api` alike — must name a loopback host in `Host` (`localhost`,
 * `127.0.0.1`, `[::1]`, `*.localhost`, any port) or one of `allowedHosts`, else it is answered **421** problem+json
 * naming the refused host and `LOCAL_ALLOWED_HOSTS` (`assertLocalHost`: the defence against DNS rebinding). A client
 * that closes the connection mid-body is logged at WARN as `local api request aborted by the client`, and answered
 * nothing.
 * @throws {Error} when the port cannot be bound.
 */
export async function startLocalHttpServer(options: LocalHttpServerOptions): Promise<LocalHttpServer> {
  const server = createServer((request, response) => {
    const started = Date.now();
    // Every `/api` answer — the handler's, and the 401/413 the server gives itself — carries the CORS headers, as
    // API Gateway adds them to its own and the integration's responses.
    const cors = (result: ApiResult): ApiResult =>
      isApiPath((request.url ?? '/').split('?')[0] ?? '/') ? withCorsHeaders(result, options.corsAllowedOrigins ?? [], request.headers) : result;
    const line = () => ({ method: request.method, path: (request.url ?? '/').split('?')[0], durationMs: Date.now() - started });
    invoke(request, options)
      .then((result) => writeResult(response, cors(result)))
      .catch((error: unknown) => {
        // Nobody is left to answer, and nothing went wrong here: a client abort, not a 500.
        if (error instanceof ClientAbortedError) return error;
        const result = cors(problemResponse(error, options.logger));
        if (error instanceof ContentTooLargeError) writeResultThenClose(request, response, result);
        else writeResult(response, result);
        return undefined;
      })
      .then((aborted) => {
        if (aborted === undefined) options.logger.info('local api request', { ...line(), status: response.statusCode });
        else {
          options.logger.warn('local api request aborted by the client', line());
          response.destroy();
        }
      })
      .catch((error: unknown) => response.destroy(error instanceof Error ? error : undefined));
  });
  server.listen(options.port, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: async () => {
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeAllConnections();
      await closed;
    },
  };
}
