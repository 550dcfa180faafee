import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { OperationDtoSchema } from '../../lib/operations/owner/operation-dto.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

describe.each(DIALECTS)('owner reads and commands on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const admitWait = (owner: string, key: string): Promise<string> => app.admitWait(owner, key);

  it.skipIf(skip)('GET answers 200 with the owner’s operation DTO', async () => {
    const id = await admitWait('alice', 'get-1');
    const response = await app.call({ method: 'GET', path: `/api/operations/${id}`, owner: 'alice' });
    expect(response.status).toBe(200);
    expect(OperationDtoSchema.parse(response.json)).toMatchObject({ id, status: 'queued' });
  });

  it.skipIf(skip)('another owner’s operation is a 404 on GET, cancel and retry, and stays untouched', async () => {
    const id = await admitWait('alice', 'private-1');
    for (const [method, path] of [
      ['GET', `/api/operations/${id}`],
      ['POST', `/api/operations/${id}/cancel`],
      ['POST', `/api/operations/${id}/retry`],
    ] as const) {
      const response = await app.call({ method, path, owner: 'mallory' });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.json).toMatchObject({ status: 404, code: 'operation_not_found' });
    }
    const own = await app.call({ method: 'GET', path: `/api/operations/${id}`, owner: 'alice' });
    expect(own.json).toMatchObject({ status: 'queued', cancelRequested: false });
  });

  it.skipIf(skip)('an id that is not an operation id is a 404, never a 400 or 500', async () => {
    const response = await app.call({ method: 'GET', path: '/api/operations/not-a-uuid', owner: 'alice' });
    expect(response.status).toBe(404);
    expect(response.json.code).toBe('operation_not_found');
  });

  it.skipIf(skip)('cancelling a queued operation answers 200 with it cancelled, and notifies the owner', async () => {
    const id = await admitWait('dave', 'cancel-queued');
    const response = await app.call({ method: 'POST', path: `/api/operations/${id}/cancel`, owner: 'dave' });
    expect(response.status).toBe(200);
    expect(OperationDtoSchema.parse(response.json)).toMatchObject({ id, status: 'cancelled', cancelRequested: true });
    expect(response.json.finishedAt).not.toBeNull();
    const notifications = await app.call({ method: 'GET', path: '/api/notifications', owner: 'dave' });
    expect(notifications.json.items).toEqual([expect.objectContaining({ operationId: id, status: 'cancelled', failure: null })]);
  });

  it.skipIf(skip)('cancelling a running operation answers 200 with it still running and cancelRequested: true', async () => {
    const { operationId } = await app.admitAndClaim('erin', 'cancel-running');
    const response = await app.call({ method: 'POST', path: `/api/operations/${operationId}/cancel`, owner: 'erin' });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ status: 'running', cancelRequested: true });
  });

  it.skipIf(skip)('cancelling a succeeded operation answers 409 problem+json and leaves it succeeded', async () => {
    const { operationId, claim, scope } = await app.admitAndClaim('frank', 'cancel-succeeded');
    await completeOperation(scope, claim);
    const response = await app.call({ method: 'POST', path: `/api/operations/${operationId}/cancel`, owner: 'frank' });
    expect(response.status).toBe(409);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ status: 409, code: 'invalid_transition' });
    const after = await app.call({ method: 'GET', path: `/api/operations/${operationId}`, owner: 'frank' });
    expect(after.json.status).toBe('succeeded');
  });

  it.skipIf(skip)('retrying a queued operation answers 409 problem+json', async () => {
    const id = await admitWait('gina', 'retry-queued');
    const response = await app.call({ method: 'POST', path: `/api/operations/${id}/retry`, owner: 'gina' });
    expect(response.status).toBe(409);
    expect(response.json).toMatchObject({ status: 409, code: 'invalid_transition' });
  });

  it.skipIf(skip)('retrying a cancelled operation answers 202 with it queued again and sends a wake-up', async () => {
    const id = await admitWait('hank', 'retry-cancelled');
    await app.call({ method: 'POST', path: `/api/operations/${id}/cancel`, owner: 'hank' });
    const response = await app.call({ method: 'POST', path: `/api/operations/${id}/retry`, owner: 'hank' });
    expect(response.status).toBe(202);
    expect(OperationDtoSchema.parse(response.json)).toMatchObject({ id, status: 'queued', attempt: 0, cancelRequested: false, finishedAt: null });
    expect(app.wakeups.sent).toContainEqual({ v: 1, reason: 'owner_retry', operationId: id });
  });
});
