import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from '../../lib/http/cors.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { silentLogger } from '../../lib/logger.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const SECRET = 'cors-suite-dev-secret-of-at-least-32-characters';
const ALLOWED = 'http://app.allowed.test:8080';
const OTHER = 'http://evil.test:8080';

/** The `access-control-*` headers of a response. */
function corsHeadersOf(response: Response): Record<string, string> {
  return Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-')));
}

describe('CORS_ALLOWED_ORIGINS', () => {
  it('is empty by default and a deduplicated list of exact origins when set', () => {
    expect(loadConfig({}).CORS_ALLOWED_ORIGINS).toEqual([]);
    const config = loadConfig({ CORS_ALLOWED_ORIGINS: ' https://app.example.com, http://localhost:5173,https://app.example.com ' });
    expect(config.CORS_ALLOWED_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(Object.isFrozen(config.CORS_ALLOWED_ORIGINS)).toBe(true);
  });

  it.each([
    ['*', /"\*" is not accepted/],
    ['https://app.example.com/', /write it as "https:\/\/app\.example\.com"/],
    ['https://app.example.com/console', /not an exact origin/],
    ['https://App.Example.com', /write it as "https:\/\/app\.example\.com"/],
    ['https://app.example.com:443', /no default port/],
    ['ftp://files.example.com', /not an http or https origin/],
    ['app.example.com', /not an origin/],
    ['null', /not an origin/],
  ])('refuses %s with a message naming the variable', (value, message) => {
    expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: `https://ok.example.com,${value}` })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value })).toThrow(/CORS_ALLOWED_ORIGINS/);
    expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value })).toThrow(message);
  });
});

describe('CORS at the local server (SQLite)', () => {
  let app: ApiTestApp;
  let withCors: LocalHttpServer;
  let without: LocalHttpServer;
  let token: string;

  beforeAll(async () => {
    app = await createApiTestApp('sqlite');
    const base = { port: 0, handler: app.handler, devJwtSecret: SECRET, logger: silentLogger };
    withCors = await startLocalHttpServer({ ...base, corsAllowedOrigins: [ALLOWED] });
    without = await startLocalHttpServer(base);
    token = await signDevToken('cors-owner', SECRET);
  });
  afterAll(async () => {
    await withCors?.close();
    await without?.close();
    await app?.drop();
  });

  const preflight = (server: LocalHttpServer, origin: string | undefined) =>
    fetch(`${server.url}/api/operations`, {
      method: 'OPTIONS',
      headers: {
        ...(origin ? { origin } : {}),
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,idempotency-key',
      },
    });
  const admit = (server: LocalHttpServer, origin: string | undefined, key: string, authorization = `Bearer ${token}`) =>
    fetch(`${server.url}/api/operations`, {
      method: 'POST',
      headers: { ...(origin ? { origin } : {}), authorization, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'document', id: key }, params: { durationMs: 10 } }),
    });

  it('a preflight from an allowed origin is answered 204 without a token, with every CORS header', async () => {
    const response = await preflight(withCors, ALLOWED);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(corsHeadersOf(response)).toEqual({
      'access-control-allow-origin': ALLOWED,
      'access-control-allow-methods': CORS_ALLOWED_METHODS.join(', '),
      'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
      'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    });
    expect(response.headers.get('vary')).toBe('Origin');
    expect(CORS_ALLOWED_HEADERS).toEqual(expect.arrayContaining(['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match']));
  });

  it('a preflight from another origin gets no CORS header at all', async () => {
    const response = await preflight(withCors, OTHER);
    expect(corsHeadersOf(response)).toEqual({});
    expect(response.headers.get('vary')).toBe('Origin');
  });

  it('an OPTIONS without an Origin is no preflight: the authorizer refuses it, with no CORS header', async () => {
    const response = await preflight(withCors, undefined);
    expect(response.status).toBe(401);
    expect(corsHeadersOf(response)).toEqual({});
  });

  it('an actual request from an allowed origin carries Allow-Origin, Vary and the exposed headers — its 401 too', async () => {
    const admitted = await admit(withCors, ALLOWED, 'cors-1');
    expect(admitted.status).toBe(202);
    expect(corsHeadersOf(admitted)).toEqual({ 'access-control-allow-origin': ALLOWED, 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', ') });
    expect(admitted.headers.get('vary')).toBe('Origin');
    expect(admitted.headers.get('location')).toMatch(/^\/api\/operations\//);
    const refused = await admit(withCors, ALLOWED, 'cors-2', 'Bearer not.a.token');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('an actual request from another origin, or with no Origin, carries no CORS header', async () => {
    for (const [origin, key] of [[OTHER, 'cors-3'], [undefined, 'cors-4']] as const) {
      const response = await admit(withCors, origin, key);
      expect(response.status).toBe(202);
      expect(corsHeadersOf(response), String(origin)).toEqual({});
      expect(response.headers.get('vary')).toBe('Origin');
    }
  });

  it('with no origins configured nothing changes: the preflight is a 401 and no answer has a CORS header or Vary', async () => {
    const refused = await preflight(without, ALLOWED);
    expect(refused.status).toBe(401);
    expect(corsHeadersOf(refused)).toEqual({});
    const admitted = await admit(without, ALLOWED, 'cors-5');
    expect(admitted.status).toBe(202);
    expect(corsHeadersOf(admitted)).toEqual({});
    expect(admitted.headers.get('vary')).toBeNull();
  });

  it('the API Lambda answers a preflight that reaches it 204, without claims and without CORS headers of its own', async () => {
    const response = await app.call({
      method: 'OPTIONS',
      path: '/api/operations',
      owner: null,
      headers: { origin: ALLOWED, 'access-control-request-method': 'POST' },
    });
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect(Object.keys(response.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expect((await app.call({ method: 'OPTIONS', path: '/api/operations', owner: null })).status, 'an OPTIONS that is no preflight').toBe(401);
  });
});
