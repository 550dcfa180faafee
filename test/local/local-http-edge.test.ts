import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../lib/http/api-handler.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { LOCAL_MAX_BODY_BYTES, startLocalHttpServer, type LocalApiHandler, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import type { Logger } from '../../lib/logger.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { sendRaw } from '../support/raw-http.js';
import { waitFor } from '../support/wait-for.js';

const SECRET = 'edge-test-secret-of-at-least-32-characters';

/** A logger that keeps every line, for "logged as …" assertions. */
function recordingLogger(): Logger & { readonly lines: Array<{ level: string; message: string }> } {
  const lines: Array<{ level: string; message: string }> = [];
  const keep = (level: string) => (message: string) => void lines.push({ level, message });
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

/** Sends `bytes` as they are on a fresh connection to 127.0.0.1:`port`; resolves with everything answered until close. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('the local server refuses a foreign Host before anything else', () => {
  let app: ApiTestApp;
  let server: LocalHttpServer;
  let listed: LocalHttpServer;
  const events: ApiEvent[] = [];

  beforeAll(async () => {
    app = await createApiTestApp('sqlite');
    const handler: LocalApiHandler = async (event, context) => {
      events.push(event);
      return app.handler(event, context);
    };
    server = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET, logger: recordingLogger() });
    listed = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET, logger: recordingLogger(), allowedHosts: ['devbox.lan'] });
  });
  afterAll(async () => {
    await server?.close();
    await listed?.close();
    await app?.drop();
  });

  it('a DNS-rebinding page holding a valid operator token gets 421 from /api/ops/capacity, which answers 200 under 127.0.0.1', async () => {
    const token = await signDevToken('ops-olivia', SECRET, { scope: ['ops:read', 'ops:write'] });
    const before = events.length;
    const rebound = await sendRaw(server.url, { path: '/api/ops/capacity', headers: { host: 'rebind.attacker.example', authorization: `Bearer ${token}` } });
    expect(rebound.status).toBe(421);
    expect(rebound.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(rebound.text) as { code: string; detail: string };
    expect(problem.code).toBe('host_not_allowed');
    expect(problem.detail).toContain('"rebind.attacker.example"');
    expect(problem.detail).toContain('LOCAL_ALLOWED_HOSTS=rebind.attacker.example');
    expect(events.length, 'the handler was never called').toBe(before);

    const local = await sendRaw(server.url, { path: '/api/ops/capacity', headers: { host: `127.0.0.1:${server.port}`, authorization: `Bearer ${token}` } });
    expect(local.status).toBe(200);
  });

  it('the hint at /, the console and the public OpenAPI document sit behind the same check', async () => {
    for (const path of ['/', '/console', '/console/operations/x', '/api/openapi.json', '/api/operations']) {
      const answer = await sendRaw(server.url, { path, headers: { host: 'evil.example:3000' } });
      expect(answer.status, path).toBe(421);
      expect(JSON.parse(answer.text), path).toMatchObject({ status: 421, code: 'host_not_allowed' });
    }
  });

  it('loopback names on any port pass; other names, a missing Host and a malformed one are refused', async () => {
    const passes = ['localhost', `localhost:${server.port}`, 'LOCALHOST:1', '127.0.0.1', `[::1]:${server.port}`, 'app.localhost:5173', 'a.b.localhost'];
    for (const host of passes) expect((await sendRaw(server.url, { path: '/', headers: { host } })).status, host).toBe(200);
    const refused = ['127.0.0.2', 'localhost.attacker.example', 'attacker-localhost', '0.0.0.0', 'devbox.lan', 'localhost:3000@evil', 'local host', '[::2]'];
    for (const host of refused) expect((await sendRaw(server.url, { path: '/', headers: { host } })).status, host).toBe(421);
    // HTTP/1.0 has no Host requirement, so node's server passes such a request on (it refuses a bare HTTP/1.1 one itself).
    const none = await rawExchange(server.port, 'GET / HTTP/1.0\r\n\r\n');
    expect(none).toMatch(/^HTTP\/1\.1 421 /);
    expect(none).toContain('"code":"host_not_allowed"');
  });

  it('a name listed in allowedHosts (LOCAL_ALLOWED_HOSTS) passes on any port, in any case; others stay refused', async () => {
    for (const host of ['devbox.lan', 'DevBox.LAN:3000', 'localhost']) expect((await sendRaw(listed.url, { path: '/', headers: { host } })).status, host).toBe(200);
    for (const host of ['other.lan', 'sub.devbox.lan']) expect((await sendRaw(listed.url, { path: '/', headers: { host } })).status, host).toBe(421);
  });
});

describe('the local server answers an oversized body with 413 before reading it, and a client abort is not a 500', () => {
  const logger = recordingLogger();
  let server: LocalHttpServer;
  let calls = 0;
  let token: string;
  const host = { host: 'localhost' };

  beforeAll(async () => {
    const handler: LocalApiHandler = async () => {
      calls += 1;
      return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
    };
    server = await startLocalHttpServer({ port: 0, handler, devJwtSecret: SECRET, logger });
    token = await signDevToken('alice', SECRET);
  });
  afterAll(async () => {
    await server?.close();
  });

  const json = () => ({ ...host, authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  it('a 20 MB upload with Content-Length and no Expect gets the 413 problem, not a broken pipe, and the handler is never called', async () => {
    const before = calls;
    const answer = await sendRaw(server.url, { method: 'POST', path: '/api/operations', headers: json(), body: Buffer.alloc(20 * 1024 * 1024, 'x') });
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.text)).toMatchObject({ status: 413, code: 'content_too_large' });
    expect(answer.clientError, 'the client finished sending without a reset').toBeUndefined();
    expect(calls).toBe(before);
  });

  it('a declared Content-Length over the cap is refused before the token is checked', async () => {
    const answer = await sendRaw(server.url, {
      method: 'POST',
      path: '/api/operations',
      headers: { ...host, 'content-type': 'application/json' },
      body: Buffer.alloc(LOCAL_MAX_BODY_BYTES + 1, 'x'),
    });
    expect(answer.status).toBe(413);
  });

  it('a chunked 20 MB upload gets 413 as soon as the cap is passed, and the client sees it', async () => {
    const before = calls;
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    const answer = await sendRaw(server.url, { method: 'POST', path: '/api/operations', headers: json(), body: Array.from({ length: 20 }, () => chunk) });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'content_too_large' });
    expect(calls).toBe(before);
  });

  it('a body of exactly the cap still reaches the handler', async () => {
    const before = calls;
    const answer = await sendRaw(server.url, { method: 'POST', path: '/api/operations', headers: json(), body: Buffer.alloc(LOCAL_MAX_BODY_BYTES, ' ') });
    expect(answer.status).toBe(200);
    expect(calls).toBe(before + 1);
  });

  it('a client that closes the connection mid-body is logged at WARN as a client abort, never as an ERROR 500', async () => {
    const { hostname, port } = new URL(server.url);
    const before = logger.lines.length;
    const req = httpRequest({ hostname, port, path: '/api/operations', method: 'POST', headers: { ...json(), 'content-length': '1000' } });
    req.on('error', () => undefined);
    // The headers and part of the body are on their way; then the client leaves, 988 bytes short.
    await new Promise<void>((resolve) => req.write('{"taskType":', () => resolve()));
    req.destroy();
    await waitFor(() => logger.lines.slice(before).some((line) => line.message === 'local api request aborted by the client'), {
      timeoutMs: 5000,
      what: 'the abort to be logged',
    });
    const lines = logger.lines.slice(before);
    expect(lines.find((line) => line.message === 'local api request aborted by the client')?.level).toBe('warn');
    expect(lines.filter((line) => line.level === 'error')).toEqual([]);
  });
});
