import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken } from '../../lib/http/auth.js';
import { LOCAL_MAX_BODY_BYTES, startLocalHttpServer, type LocalApiHandler, type LocalHttpServer } from '../../lib/http/local-http-server.js';
import { silentLogger } from '../../lib/logger.js';
import type { ApiEvent } from '../../lib/http/api-handler.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

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
