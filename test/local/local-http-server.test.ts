import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../lib/http/api-handler.js';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken } from '../../lib/local/dev-token.js';
import { LOCAL_MAX_BODY_BYTES, startLocalHttpServer, type LocalApiHandler, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { silentLogger } from '../../lib/logger.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';

const SECRET = 'a-test-secret-of-at-least-32-characters!';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Tokens the local server must refuse, each with a valid-looking `sub`. */
/**
 * Flips one byte in the middle of the signature. (Changing the last base64url character is not enough: its low bits
 * are padding, so some such edits leave the signature bytes, and the token, valid.)
 */
function tamperSignature(token: string): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const bytes = Buffer.from(signature, 'base64url');
  bytes[10] = (bytes[10] ?? 0) ^ 0xff;
  return `${header}.${payload}.${bytes.toString('base64url')}`;
}

async function refusedTokens(): Promise<Array<[string, string]>> {
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: 'alice', iss: DEV_TOKEN_ISSUER, aud: DEV_TOKEN_AUDIENCE, iat: now, exp: now + 3600 };
  const key = new TextEncoder().encode(SECRET);
  return [
    ['a token signed with another secret', await signDevToken('alice', 'another-secret-of-at-least-32-characters')],
    ['an alg: none token', `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(claims)}.`],
    ['an HS512 token signed with the right secret', await new SignJWT(claims).setProtectedHeader({ alg: 'HS512' }).sign(key)],
    ['an expired token', await new SignJWT({ ...claims, iat: now - 7200, exp: now - 3600 }).setProtectedHeader({ alg: 'HS256' }).sign(key)],
    ['a token issued an hour from now', await new SignJWT({ ...claims, iat: now + 3600, exp: now + 7200 }).setProtectedHeader({ alg: 'HS256' }).sign(key)],
    ['a token for another audience', await new SignJWT({ ...claims, aud: 'someone-else' }).setProtectedHeader({ alg: 'HS256' }).sign(key)],
    ['a token without sub', await new SignJWT({ ...claims, sub: undefined }).setProtectedHeader({ alg: 'HS256' }).sign(key)],
    ['a token whose signature was tampered with', tamperSignature(await signDevToken('alice', SECRET))],
  ];
}

describe.each(DIALECTS)('local HTTP server in front of the real API handler on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let server: LocalHttpServer;
  const events: ApiEvent[] = [];

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    const handler: LocalApiHandler = async (event, context) => {
      events.push(event);
      return app.handler(event, context);
    };
    server = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET, logger: silentLogger });
  });
  afterAll(async () => {
    await server?.close();
    await app?.drop();
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it.skipIf(skip)('a verified dev token admits, replays and reads an operation as its sub', async () => {
    const token = await signDevToken('alice', SECRET, { scope: ['ops:write'] });
    const request = {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': 'local-1' },
      body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'document', id: 'doc-1' }, params: { durationMs: 10 } }),
    };
    const created = await fetch(`${server.url}/api/operations`, request);
    expect(created.status).toBe(202);
    expect(created.headers.get('content-type')).toBe('application/json');
    const location = created.headers.get('location');
    const dto = (await created.json()) as { id: string };
    expect(location).toBe(`/api/operations/${dto.id}`);

    const replay = await fetch(`${server.url}/api/operations`, request);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const read = await fetch(`${server.url}${location}`, { headers: bearer(token) });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { id: string }).id).toBe(dto.id);

    const asBob = await fetch(`${server.url}${location}`, { headers: bearer(await signDevToken('bob', SECRET)) });
    expect(asBob.status).toBe(404);

    const event = events.find((e) => e.requestContext.http.method === 'POST');
    expect(event?.requestContext.authorizer.jwt.claims.sub).toBe('alice');
    expect(event?.requestContext.authorizer.jwt.scopes).toEqual(['ops:write']);
    expect(event?.headers['idempotency-key']).toBe('local-1');
    expect(event?.isBase64Encoded).toBe(false);
  });

  it.skipIf(skip)('PATCH /api/me/settings reaches the handler with its body, and GET reads the change back', async () => {
    const headers = bearer(await signDevToken('patcher', SECRET));
    const patched = await fetch(`${server.url}/api/me/settings`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ privacyMode: 'external_allowed' }),
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'external_allowed' });
    const read = await fetch(`${server.url}/api/me/settings`, { headers });
    expect(await read.json()).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'external_allowed' });
    const wrongMethod = await fetch(`${server.url}/api/me/settings`, { method: 'DELETE', headers });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, PATCH');
  });

  it.skipIf(skip)('query strings reach the handler decoded: limit=0 is refused with 400', async () => {
    const token = await signDevToken('alice', SECRET);
    const response = await fetch(`${server.url}/api/operations?limit=0`, { headers: bearer(token) });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
  });

  it.skipIf(skip)('no token, a malformed header, or any token failing verification answers 401 problem+json without calling the handler', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['no Authorization header', {}],
      ['a Basic Authorization header', { authorization: 'Basic YWxpY2U6cGFzcw==' }],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ...(await refusedTokens()).map(([name, token]): [string, Record<string, string>] => [name, bearer(token)]),
    ];
    const before = events.length;
    for (const [name, headers] of cases) {
      const response = await fetch(`${server.url}/api/operations`, { headers });
      expect(response.status, name).toBe(401);
      expect(response.headers.get('content-type'), name).toBe('application/problem+json');
      expect(response.headers.get('www-authenticate'), name).toBe('Bearer');
      expect(await response.json(), name).toMatchObject({ status: 401, code: 'unauthorized' });
    }
    expect(events.length).toBe(before);
  });

  it.skipIf(skip)('a body over 1 MiB answers 413 problem+json without calling the handler', async () => {
    const before = events.length;
    const response = await fetch(`${server.url}/api/operations`, {
      method: 'POST',
      headers: { ...bearer(await signDevToken('alice', SECRET)), 'idempotency-key': 'too-big' },
      body: 'x'.repeat(LOCAL_MAX_BODY_BYTES + 1),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ status: 413, code: 'content_too_large' });
    expect(events.length).toBe(before);
  });

  it.skipIf(skip)('GET / answers a plain-text hint on getting a token; other paths outside /api answer 404', async () => {
    const hint = await fetch(`${server.url}/`);
    expect(hint.status).toBe(200);
    expect(hint.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await hint.text();
    expect(text).toContain('npm run --silent token -- <user-id>');
    expect(text).toContain(`${server.url}/api/operations`);
    const other = await fetch(`${server.url}/favicon.ico`);
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
  });
});

/** A GET (or `method`) with the path sent exactly as written: fetch and `new URL` would normalise `..` away. */
function rawRequest(base: string, path: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('local HTTP server: the operator console at /console', () => {
  const root = mkdtempSync(join(tmpdir(), 'durable-ops-console-files-'));
  const built = join(root, 'console');
  const empty = join(root, 'not-built');
  const INDEX = '<!doctype html><title>console fixture</title><div id="app"></div>';
  const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10, 0x80]);
  const SECRET = 'outside-the-console-directory';
  let server: LocalHttpServer;
  let unbuilt: LocalHttpServer;
  let handlerCalls = 0;

  beforeAll(async () => {
    mkdirSync(join(built, 'assets'), { recursive: true });
    mkdirSync(empty);
    writeFileSync(join(built, 'index.html'), INDEX);
    writeFileSync(join(built, 'assets', 'index-abc123.js'), 'console.log("app")');
    writeFileSync(join(built, 'assets', 'index-abc123.css'), 'body{}');
    writeFileSync(join(built, 'assets', 'logo.png'), PNG);
    writeFileSync(join(built, '.env'), SECRET);
    writeFileSync(join(root, 'secret.txt'), SECRET);
    const handler: LocalApiHandler = async () => {
      handlerCalls += 1;
      return { statusCode: 500 };
    };
    server = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET.padEnd(32, '!'), logger: silentLogger, consoleDir: built });
    unbuilt = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET.padEnd(32, '!'), logger: silentLogger, consoleDir: empty });
  });
  afterAll(async () => {
    await server?.close();
    await unbuilt?.close();
    rmSync(root, { recursive: true, force: true });
    expect(handlerCalls, 'console requests never reach the API handler').toBe(0);
  });

  it('GET /console and /console/ answer index.html as HTML, with a strict CSP, no sniffing and revalidation', async () => {
    for (const path of ['/console', '/console/', '/console/index.html']) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(response.headers.get('cache-control'), path).toBe('no-cache');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(response.headers.get('referrer-policy'), path).toBe('no-referrer');
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).not.toContain('unsafe-');
      expect(await response.text(), path).toBe(INDEX);
    }
  });

  it("client routes (paths without a file extension) answer index.html, so a reload of /console/operations/<id> works", async () => {
    for (const path of ['/console/operations', '/console/operations/0b9d7c1e-1111-4222-8333-444455556666', '/console/capacity?x=1', '/console/no/such/page']) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(await response.text(), path).toBe(INDEX);
    }
  });

  it('assets answer with their content type, byte for byte, cacheable for a year (their names carry a content hash)', async () => {
    const cases: Array<[string, string, Buffer]> = [
      ['/console/assets/index-abc123.js', 'text/javascript; charset=utf-8', Buffer.from('console.log("app")')],
      ['/console/assets/index-abc123.css', 'text/css; charset=utf-8', Buffer.from('body{}')],
      ['/console/assets/logo.png', 'image/png', PNG],
    ];
    for (const [path, type, bytes] of cases) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe(type);
      expect(response.headers.get('content-length'), path).toBe(String(bytes.byteLength));
      expect(response.headers.get('cache-control'), path).toBe('public, max-age=31536000, immutable');
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes), path).toBe(true);
    }
  });

  it('a missing asset is a 404 problem, never index.html served as JavaScript', async () => {
    const response = await fetch(`${server.url}/console/assets/index-gone.js`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({ status: 404, code: 'route_not_found' });
  });

  it('no path leaves the console directory: .., encoded .., backslashes, NUL and dot-files are 404s', async () => {
    const paths = [
      '/console/../secret.txt',
      '/console/assets/../../secret.txt',
      '/console/%2e%2e/secret.txt',
      '/console/%2E%2E%2Fsecret.txt',
      '/console/assets/..%2f..%2fsecret.txt',
      '/console/..%5csecret.txt',
      '/console/%2e%2e%5c%2e%2e%5csecret.txt',
      '/console/.env',
      '/console/assets/%00.js',
      '/console/%E0%A4%A',
    ];
    for (const path of paths) {
      const response = await rawRequest(server.url, path);
      expect(response.status, path).toBe(404);
      expect(response.body.toString('utf8'), path).not.toContain(SECRET);
    }
  });

  it('HEAD answers the headers without a body; other methods are 405 with Allow: GET, HEAD', async () => {
    const head = await rawRequest(server.url, '/console/assets/logo.png', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('image/png');
    expect(head.headers['content-length']).toBe(String(PNG.byteLength));
    expect(head.body.byteLength).toBe(0);
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const response = await fetch(`${server.url}/console/operations`, { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow'), method).toBe('GET, HEAD');
      expect(response.headers.get('content-type'), method).toBe('application/problem+json');
    }
  });

  it('when the console is not built, /console answers a plain-text 404 that says how to build it', async () => {
    for (const path of ['/console', '/console/operations', '/console/assets/index-abc123.js']) {
      const response = await fetch(`${unbuilt.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type'), path).toBe('text/plain; charset=utf-8');
      expect(await response.text(), path).toContain('npm run build:console');
    }
  });

  it('GET / names the console URL; /consoles and /console-x are not the console', async () => {
    expect(await (await fetch(`${server.url}/`)).text()).toContain(`${server.url}/console`);
    for (const path of ['/consoles', '/console-x', '/api/console']) {
      const response = await fetch(`${server.url}${path}`);
      expect([401, 404], path).toContain(response.status);
      expect(response.headers.get('content-type'), path).toBe('application/problem+json');
    }
  });
});
