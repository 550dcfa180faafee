import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiEvent, lambdaContext, parseResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const ADMISSION = { taskType: 'demo.wait', subject: { type: 'doc', id: 'media' }, params: { durationMs: 10 } };

describe.each(DIALECTS)('request bodies at the API handler on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let jobId: string;
  let operationId: string;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    const job = await app.call({ method: 'POST', path: '/api/jobs', owner: 'alice', body: { title: 'SRE', company: 'Acme', description: 'On call.' } });
    jobId = job.json.id;
    const admitted = await app.call({ method: 'POST', path: '/api/operations', owner: 'alice', headers: { 'idempotency-key': 'body-0' }, body: ADMISSION });
    operationId = admitted.json.id;
  });
  afterAll(async () => {
    await app?.drop();
  });

  it.skipIf(skip)('a body that is not declared as JSON answers 415 unsupported_media_type on every JSON route, and admits nothing', async () => {
    const refused = ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/json', 'application/jsonp', 'application/json; charset=iso-8859-1', '*/*', ''];
    const before = await app.countOperations('alice');
    for (const [index, contentType] of refused.entries()) {
      const headers = { 'content-type': contentType, 'idempotency-key': `body-415-${index}` };
      const admission = await app.call({ method: 'POST', path: '/api/operations', owner: 'alice', headers, body: ADMISSION });
      expect(admission.status, contentType).toBe(415);
      expect(admission.headers['content-type'], contentType).toBe('application/problem+json');
      expect(admission.json, contentType).toMatchObject({ status: 415, code: 'unsupported_media_type', type: 'https://durable-ops.dev/problems/unsupported-media-type' });
      const settings = await app.call({ method: 'PATCH', path: '/api/me/settings', owner: 'alice', headers, body: { aiEnabled: false } });
      expect(settings.status, contentType).toBe(415);
    }
    expect(await app.countOperations('alice')).toBe(before);
    expect((await app.call({ method: 'GET', path: '/api/me/settings', owner: 'alice' })).json).toMatchObject({ aiEnabled: true });
  });

  it.skipIf(skip)('a body without any Content-Type answers 415 (RFC 9110 §8.3: it may be taken as application/octet-stream)', async () => {
    const event = { method: 'POST', path: '/api/jobs', owner: 'alice', body: { title: 'SRE', company: 'Acme', description: 'On call.' } };
    const bare = apiEvent(event);
    delete (bare.headers as Record<string, string | undefined>)['content-type'];
    const answer = parseResponse(await app.handler(bare, lambdaContext()));
    expect(answer.status).toBe(415);
    expect(answer.json).toMatchObject({ code: 'unsupported_media_type' });
  });

  it.skipIf(skip)('application/json in any case, with a utf-8 charset or other parameters, and +json types are JSON', async () => {
    const accepted = ['application/json', 'Application/JSON', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/merge-patch+json', 'application/vnd.acme+json; v=2'];
    for (const [index, contentType] of accepted.entries()) {
      const answer = await app.call({ method: 'POST', path: '/api/operations', owner: 'alice', headers: { 'content-type': contentType, 'idempotency-key': 'body-ok' }, body: ADMISSION });
      expect(answer.status, contentType).toBe(index === 0 ? 202 : 200);
    }
  });

  it.skipIf(skip)('a body on a route that takes none answers 400 and changes nothing; an empty body passes', async () => {
    const cases = [
      { method: 'POST', path: `/api/jobs/${jobId}/strategy-snapshot`, headers: { 'idempotency-key': 'snap-with-body' } },
      { method: 'POST', path: `/api/operations/${operationId}/cancel` },
      { method: 'POST', path: `/api/operations/${operationId}/retry` },
      { method: 'GET', path: `/api/operations/${operationId}` },
      { method: 'GET', path: '/api/openapi.json' },
    ];
    const before = await app.countOperations('alice');
    for (const request of cases) {
      for (const body of ['{}', '{"durationMs":1}', 'x']) {
        const answer = await app.call({ ...request, owner: 'alice', body });
        const label = `${request.method} ${request.path} with ${body}`;
        expect(answer.status, label).toBe(400);
        expect(answer.json, label).toMatchObject({ code: 'validation_failed', errors: [{ path: 'body', message: 'must be absent: this route takes no body' }] });
        expect(answer.text, label).not.toContain('durationMs');
      }
    }
    expect(await app.countOperations('alice')).toBe(before);
    expect((await app.call({ method: 'GET', path: `/api/operations/${operationId}`, owner: 'alice' })).json).toMatchObject({ status: 'queued', cancelRequested: false });
    // Last, as it cancels the operation: an empty body is no body, whatever its Content-Type says.
    const empty = await app.call({ method: 'POST', path: `/api/operations/${operationId}/cancel`, owner: 'alice', headers: { 'content-type': 'text/plain' }, body: '' });
    expect(empty.status, empty.text).toBe(200);
  });

  it.skipIf(skip)('an operator route stays a 404 to a non-operator, whatever body or Content-Type is sent', async () => {
    const answer = await app.call({ method: 'POST', path: '/api/ops/dlq/redrive', owner: 'alice', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(answer.status).toBe(404);
  });
});
