import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperationDtoSchema } from '../../lib/operations/owner/operation-dto.js';
import type { ApiEventInput } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const admit = (owner: string, key: string | undefined, body: unknown): ApiEventInput => ({
  method: 'POST',
  path: '/api/operations',
  owner,
  headers: key === undefined ? {} : { 'idempotency-key': key },
  body,
});

const waitBody = (durationMs = 1_000) => ({ taskType: 'demo.wait', subject: { type: 'document', id: 'doc-1' }, params: { durationMs } });

describe.each(DIALECTS)('POST /api/operations on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  it.skipIf(skip)('a new admission answers 202 with Location, the queued operation DTO and one wake-up', async () => {
    const response = await app.call(admit('alice', 'new-1', waitBody()));
    expect(response.status).toBe(202);
    const dto = OperationDtoSchema.parse(response.json);
    expect(response.headers.location).toBe(`/api/operations/${dto.id}`);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['idempotent-replayed']).toBeUndefined();
    expect(dto).toMatchObject({ taskType: 'demo.wait', status: 'queued', subject: { type: 'document', id: 'doc-1' }, statusUrl: `/api/operations/${dto.id}` });
    expect(app.wakeups.sent).toContainEqual({ v: 1, reason: 'admitted', operationId: dto.id });
  });

  it.skipIf(skip)('a replay by the same owner answers 200 with Idempotent-Replayed: true and the same operation', async () => {
    const first = await app.call(admit('alice', 'replay-1', waitBody()));
    const replay = await app.call(admit('alice', 'replay-1', waitBody()));
    expect(first.status).toBe(202);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers.location).toBeUndefined();
    expect(replay.json.id).toBe(first.json.id);
    expect(await app.countOperations('alice')).toBe(2);
  });

  it.skipIf(skip)('another owner using the same key gets an operation of their own', async () => {
    const alice = await app.call(admit('alice', 'shared-key', waitBody()));
    const bob = await app.call(admit('bob', 'shared-key', waitBody()));
    expect([alice.status, bob.status]).toEqual([202, 202]);
    expect(bob.json.id).not.toBe(alice.json.id);
    const bobReadsAlice = await app.call({ method: 'GET', path: `/api/operations/${alice.json.id}`, owner: 'bob' });
    expect(bobReadsAlice.status).toBe(404);
  });

  it.skipIf(skip)('the same key with a different request answers 422 problem+json and writes nothing', async () => {
    const first = await app.call(admit('carol', 'key-7f3a9c', waitBody(1_000)));
    const reused = await app.call(admit('carol', 'key-7f3a9c', waitBody(2_000)));
    expect(first.status).toBe(202);
    expect(reused.status).toBe(422);
    expect(reused.headers['content-type']).toBe('application/problem+json');
    expect(reused.json).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(reused.text).not.toContain('key-7f3a9c');
    expect(await app.countOperations('carol')).toBe(1);
  });

  it.skipIf(skip)('twenty concurrent identical admissions: exactly one row, one 202, nineteen 200s, no 5xx', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, () => app.call(admit('racer', 'race-1', waitBody()))));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(new Set(responses.map((r) => r.json.id)).size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(await app.countOperations('racer')).toBe(1);
  });

  const invalid: Array<[string, string | undefined, unknown, string]> = [
    ['a missing Idempotency-Key', undefined, waitBody(), 'validation_failed'],
    ['an Idempotency-Key of 129 characters', 'k'.repeat(129), waitBody(), 'validation_failed'],
    ['an Idempotency-Key with characters outside [A-Za-z0-9._:-]', 'key with spaces', waitBody(), 'validation_failed'],
    ['a body that is not JSON', 'bad-json', '{"taskType": "demo.wait",', 'validation_failed'],
    ['a JSON body that is not an object', 'array-body', '[1, 2]', 'validation_failed'],
    ['a body larger than 16 KiB', 'big-body', { ...waitBody(), padding: 'x'.repeat(16 * 1024) }, 'validation_failed'],
    ['an empty body', 'empty-body', '', 'validation_failed'],
    ['an unknown task type', 'unknown-type', { ...waitBody(), taskType: 'demo.nope' }, 'unknown_task_type'],
    ['params out of range (demo.wait durationMs 600001)', 'out-of-range', waitBody(600_001), 'validation_failed'],
    ['an unknown field in the body', 'extra-field', { ...waitBody(), prompt: 'raw content' }, 'validation_failed'],
  ];
  it.skipIf(skip).each(invalid)('%s answers 400 problem+json and writes no row', async (_name, key, body, code) => {
    const owner = `invalid-${code}-${String(key).slice(0, 20)}`;
    const response = await app.call(admit(owner, key, body));
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ status: 400, code, type: `https://durable-ops.dev/problems/${code.replaceAll('_', '-')}` });
    expect(Object.keys(response.json).every((k) => ['type', 'title', 'status', 'detail', 'code', 'errors'].includes(k))).toBe(true);
    if (key) expect(response.text).not.toContain(key);
    expect(await app.countOperations(owner)).toBe(0);
  });
});
