import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONDITIONAL_CACHE_CONTROL, ifNoneMatchMatches, strongEtagOf } from '../../lib/http/conditional-get.js';
import { heartbeat } from '../../lib/operations/lease/heartbeat.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { silentLogger } from '../../lib/logger.js';
import { startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const SECRET = 'conditional-get-suite-secret-of-32-chars-at-least';

describe('If-None-Match evaluation (RFC 9110 §13.1.2, weak comparison)', () => {
  const etag = strongEtagOf('{"id":"x"}');

  it('the ETag is a strong, quoted SHA-256 of the body that changes with any byte of it', () => {
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(strongEtagOf('{"id":"x"}')).toBe(etag);
    expect(strongEtagOf('{"id":"y"}')).not.toBe(etag);
  });

  it('matches the tag itself, its weak form, any list holding either, and *', () => {
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, `  "a" ,W/${etag} , "b"`, `,${etag},`, '*', ' * ']) {
      expect(ifNoneMatchMatches(header, etag), header).toBe(true);
    }
  });

  it('matches nothing for another tag, no header, or a malformed list (answered as unconditional)', () => {
    for (const header of [undefined, '', '"other"', 'W/"other"', etag.slice(1, -1), `${etag} junk`, `"a" "b", ${etag}`, `w/${etag}`, '**']) {
      expect(ifNoneMatchMatches(header, etag), String(header)).toBe(false);
    }
  });
});

describe.each(DIALECTS)('conditional GET of the status URL on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const admit = (owner: string, key: string): Promise<string> => app.admitWait(owner, key);
  const get = (owner: string | null, id: string, ifNoneMatch?: string) =>
    app.call({ method: 'GET', path: `/api/operations/${id}`, owner, headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } });

  it.skipIf(skip)('200 carries a strong ETag of its body and Cache-Control: private, no-cache', async () => {
    const id = await admit('alice', 'etag-1');
    const response = await get('alice', id);
    expect(response.status).toBe(200);
    expect(response.headers.etag).toBe(strongEtagOf(response.text));
    expect(response.headers['cache-control']).toBe(CONDITIONAL_CACHE_CONTROL);
    expect(response.json).toMatchObject({ id, status: 'queued' });
  });

  it.skipIf(skip)('If-None-Match with the current ETag answers 304 with no body and the same ETag', async () => {
    const id = await admit('alice', 'etag-2');
    const { headers } = await get('alice', id);
    for (const header of [headers.etag!, `W/${headers.etag}`, `"stale", ${headers.etag}`, '*']) {
      const response = await get('alice', id, header);
      expect(response.status, header).toBe(304);
      expect(response.text, header).toBe('');
      expect(response.headers.etag).toBe(headers.etag);
      expect(response.headers['cache-control']).toBe(CONDITIONAL_CACHE_CONTROL);
      expect(response.headers['content-type']).toBeUndefined();
    }
    expect((await get('alice', id, '"stale"')).status).toBe(200);
  });

  it.skipIf(skip)('after a cancel the old ETag answers 200 with the new body and a different ETag', async () => {
    const id = await admit('alice', 'etag-3');
    const before = await get('alice', id);
    const cancel = await app.call({ method: 'POST', path: `/api/operations/${id}/cancel`, owner: 'alice' });
    expect(cancel.json.status).toBe('cancelled');
    const after = await get('alice', id, before.headers.etag);
    expect(after.status).toBe(200);
    expect(after.json.status).toBe('cancelled');
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect((await get('alice', id, after.headers.etag)).status).toBe(304);
  });

  it.skipIf(skip)('a progress heartbeat right after the claim changes the ETag, whatever the clock resolution', async () => {
    const { operationId, claim, scope } = await app.admitAndClaim('carol', 'etag-4');
    const running = await get('carol', operationId);
    expect(running.json.status).toBe('running');
    await heartbeat(scope, claim, { percent: 40, stage: 'halfway' });
    const progressed = await get('carol', operationId, running.headers.etag);
    expect(progressed.status).toBe(200);
    expect(progressed.json.progress).toEqual({ percent: 40, stage: 'halfway' });
    expect(progressed.headers.etag).not.toBe(running.headers.etag);
  });

  it.skipIf(skip)('another owner with a valid ETag gets 404, never 304; no token gets 401', async () => {
    const id = await admit('alice', 'etag-5');
    const { headers } = await get('alice', id);
    const mallory = await get('mallory', id, headers.etag);
    expect(mallory.status).toBe(404);
    expect(mallory.json).toMatchObject({ code: 'operation_not_found' });
    expect(mallory.headers.etag).toBeUndefined();
    expect((await get('mallory', id, '*')).status).toBe(404);
    expect((await get(null, id, headers.etag)).status).toBe(401);
  });

  describe('through the local HTTP server', () => {
    let server: LocalHttpServer;
    beforeAll(async () => {
      if (!skip) server = await startLocalHttpServer({ port: 0, handler: app.handler, devJwtSecret: SECRET, logger: silentLogger });
    });
    afterAll(async () => server?.close());

    it.skipIf(skip)('If-None-Match reaches the handler and the 304 goes out with no body', async () => {
      const id = await admit('dave', 'etag-6');
      const authorization = `Bearer ${await signDevToken('dave', SECRET)}`;
      const first = await fetch(`${server.url}/api/operations/${id}`, { headers: { authorization } });
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      expect(etag).toBe(strongEtagOf(await first.text()));
      const second = await fetch(`${server.url}/api/operations/${id}`, { headers: { authorization, 'if-none-match': etag } });
      expect(second.status).toBe(304);
      expect(second.headers.get('etag')).toBe(etag);
      expect(await second.text()).toBe('');
      const other = await fetch(`${server.url}/api/operations/${id}`, { headers: { authorization: `Bearer ${await signDevToken('eve', SECRET)}`, 'if-none-match': etag } });
      expect(other.status).toBe(404);
    });
  });
});
