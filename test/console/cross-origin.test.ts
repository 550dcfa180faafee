import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { startLocalStack, type LocalStack } from '../../lib/local/local-stack.js';
import { silentLogger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import type { Observability } from '../../lib/observability/observability.js';
import { waitFor } from '../support/wait-for.js';
import { browserSuiteMode, CHROMIUM_PATH, openWatchedPage, type WatchedPage } from './chromium-browser.js';

const SECRET = 'cross-origin-suite-dev-secret-of-32-chars';
const quiet: Observability = Object.freeze({ logger: silentLogger, metrics: noopMetrics, middlewares: [] });

/**
 * The page's script. `window.admit(api, token, key)` admits a `demo.wait` operation with a preflighted request
 * (`Authorization`, `Idempotency-Key`, a JSON body) and resolves with the status and `Location` the page could read;
 * `window.poll(api, token, path, etag)` reads the status URL, conditionally when `etag` is given, and resolves with its
 * status, `ETag` and the operation's status. Either resolves with `{error}` when its fetch rejected.
 */
const CLIENT_SCRIPT = `
const guarded = (work) => work().catch((error) => ({ error: String(error) }));
window.admit = (api, token, key) => guarded(async () => {
  const response = await fetch(api + '/api/operations', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + token, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'document', id: key }, params: { durationMs: 10 } }),
  });
  return { status: response.status, location: response.headers.get('location') };
});
window.poll = (api, token, path, etag) => guarded(async () => {
  const headers = { authorization: 'Bearer ' + token, ...(etag ? { 'if-none-match': etag } : {}) };
  const response = await fetch(api + path, { headers, cache: 'no-store' });
  const text = await response.text();
  return { status: response.status, etag: response.headers.get('etag'), operation: text ? JSON.parse(text).status : null };
});
`;

/** A static server of one page and its script, on its own port: another origin than the API's. */
async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    if (request.url === '/client.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(CLIENT_SCRIPT);
      return;
    }
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><html><head><title>cross-origin client</title><script src="/client.js"></script></head><body></body></html>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const mode = browserSuiteMode();

describe.skipIf(mode === 'skip')('the API called from a page on another origin, in Chromium', () => {
  let dir = '';
  let stack: LocalStack;
  let allowed: { server: Server; origin: string };
  let other: { server: Server; origin: string };
  let watched: WatchedPage;

  beforeAll(async () => {
    if (mode === 'fail') throw new Error(`CI=true but ${CHROMIUM_PATH} is missing: install Debian's chromium (apt-get install chromium).`);
    dir = mkdtempSync(join(tmpdir(), 'durable-ops-cors-'));
    allowed = await startPageServer();
    other = await startPageServer();
    const config = loadConfig({
      DATABASE_URL: `sqlite:${dir}/cors.sqlite`,
      PORT: '0',
      DEMO_TASKS: '1',
      DEV_JWT_SECRET: SECRET,
      CORS_ALLOWED_ORIGINS: allowed.origin,
    });
    stack = await startLocalStack(config, quiet);
    watched = await openWatchedPage();
  });
  afterAll(async () => {
    await watched?.close();
    await stack?.stop();
    for (const page of [allowed, other]) if (page) await new Promise((resolve) => page.server.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Operations of `owner` in the stack's database. */
  const operationsOf = async (owner: string) =>
    (await stack.runtime.store.db.selectFrom('operations').select('id').where('owner_user_id', '=', owner).execute()).length;

  type PageResult = Record<string, unknown>;
  type PageApi = { admit(api: string, token: string, key: string): Promise<PageResult>; poll(api: string, token: string, path: string, etag: string | null): Promise<PageResult> };

  /** Opens the page of `origin` and admits an operation from it for `owner`. */
  const admitFrom = async (origin: string, owner: string, key: string) => {
    await watched.page.goto(`${origin}/`);
    await watched.page.waitForFunction(() => typeof (globalThis as unknown as Partial<PageApi>).poll === 'function');
    const token = await signDevToken(owner, SECRET);
    const admitted = await watched.page.evaluate(([api, t, k]) => (globalThis as unknown as PageApi).admit(api, t, k), [stack.url, token, key] as const);
    return { token, admitted };
  };
  /** Polls `path` from the page now open, conditionally when `etag` is given. */
  const pollFromPage = (token: string, path: string, etag: string | null = null) =>
    watched.page.evaluate(([api, t, p, e]) => (globalThis as unknown as PageApi).poll(api, t, p, e), [stack.url, token, path, etag] as const);

  it('a page on an allowed origin admits an operation, reads its Location and ETag, and revalidates to a 304', async () => {
    expect(new URL(allowed.origin).port).not.toBe(new URL(stack.url).port);
    const { token, admitted } = await admitFrom(allowed.origin, 'cors-alice', 'browser-1');
    expect(admitted).toMatchObject({ status: 202, location: expect.stringMatching(/^\/api\/operations\//) });
    expect(await operationsOf('cors-alice')).toBe(1);
    const location = String(admitted.location);
    // The ETag changes while the worker runs it; once it has succeeded, the page's revalidation is a 304, same ETag.
    const done = await waitFor(async () => {
      const read = await pollFromPage(token, location);
      return read.operation === 'succeeded' ? read : undefined;
    }, { what: 'the page to read the operation as succeeded', timeoutMs: 30_000, intervalMs: 200 });
    expect(done).toMatchObject({ status: 200, etag: expect.stringMatching(/^"[A-Za-z0-9_-]{43}"$/) });
    expect(await pollFromPage(token, location, String(done.etag))).toEqual({ status: 304, etag: done.etag, operation: null });
    expect(watched.errors).toEqual([]);
  });

  it('the same fetch from a page on another origin is blocked by CORS, and nothing is admitted', async () => {
    const before = await operationsOf('cors-mallory');
    const { admitted } = await admitFrom(other.origin, 'cors-mallory', 'browser-2');
    expect(admitted.error).toMatch(/TypeError: Failed to fetch/);
    expect(watched.errors.some((line) => /blocked by CORS policy/.test(line))).toBe(true);
    expect(await operationsOf('cors-mallory')).toBe(before);
    expect(before).toBe(0);
  });
});
