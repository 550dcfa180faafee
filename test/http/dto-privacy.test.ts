import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failOperation } from '../../lib/operations/lease/lease-operations.js';
import { NotificationDtoSchema, OperationDtoSchema } from '../../lib/operations/owner/operation-dto.js';
import type { ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const KEY = 'idem-SECRET-5e1d';
const FAILURE_TEXT = 'SECRET-FAILURE-TEXT from provider acme, model big-1, result s3://bucket/out.json';
const FORBIDDEN_FIELDS = /^(idempotency_?key|lease_?token|lease_?owner|owner_?user_?id|provider|model|route|result.*|failure_?message|message|params.*|request_?hash)$/i;

function fieldNames(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(fieldNames);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([name, inner]) => [name, ...fieldNames(inner)]);
}

describe.each(DIALECTS)('what the owner API never shows, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let operationId: string;
  let leaseToken: string;
  const responses: Array<[string, ParsedResponse]> = [];

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    const claimed = await app.admitAndClaim('olive', KEY);
    operationId = claimed.operationId;
    leaseToken = claimed.claim.leaseToken;
    const call = async (name: string, input: Parameters<ApiTestApp['call']>[0]) => {
      const response = await app.call(input);
      responses.push([name, response]);
      return response;
    };
    await call('GET while running', { method: 'GET', path: `/api/operations/${operationId}`, owner: 'olive' });
    await failOperation(claimed.scope, claimed.claim, { kind: 'permanent', message: FAILURE_TEXT }, 0, 0);
    await call('GET after failure', { method: 'GET', path: `/api/operations/${operationId}`, owner: 'olive' });
    await call('list', { method: 'GET', path: '/api/operations', owner: 'olive' });
    await call('notifications', { method: 'GET', path: '/api/notifications', owner: 'olive' });
    await call('cancel of failed (409)', { method: 'POST', path: `/api/operations/${operationId}/cancel`, owner: 'olive' });
    const body = { taskType: 'test.claimable', subject: { type: 'doc', id: 'doc-1' } };
    await call('replay', { method: 'POST', path: '/api/operations', owner: 'olive', headers: { 'idempotency-key': KEY }, body });
    await call('key reused (422)', {
      method: 'POST',
      path: '/api/operations',
      owner: 'olive',
      headers: { 'idempotency-key': KEY },
      body: { ...body, subject: { type: 'doc', id: 'other' } },
    });
    await call('retry (202)', { method: 'POST', path: `/api/operations/${operationId}/retry`, owner: 'olive' });
    await call('unknown fields (400)', {
      method: 'POST',
      path: '/api/operations',
      owner: 'olive',
      headers: { 'idempotency-key': 'other-key' },
      body: { ...body, rawPromptField: 'x', params: { rawParamField: 1 } },
    });
  });
  afterAll(async () => app?.drop());

  it.skipIf(skip)('the failed operation shows only its bounded failure code', async () => {
    const failed = responses.find(([name]) => name === 'GET after failure')?.[1];
    expect(failed?.json.failure).toEqual({ code: 'permanent_error' });
    expect(responses.map(([name, r]) => [name, r.status])).toEqual([
      ['GET while running', 200],
      ['GET after failure', 200],
      ['list', 200],
      ['notifications', 200],
      ['cancel of failed (409)', 409],
      ['replay', 200],
      ['key reused (422)', 422],
      ['retry (202)', 202],
      ['unknown fields (400)', 400],
    ]);
  });

  it.skipIf(skip)('no DTO or error body contains the idempotency key, the lease token, failure text, result references or echoed input', () => {
    for (const [name, response] of responses) {
      expect(response.text, name).not.toContain(KEY);
      expect(response.text, name).not.toContain(leaseToken);
      expect(response.text, name).not.toContain('SECRET-FAILURE-TEXT');
      expect(response.text, name).not.toContain('s3://');
      expect(response.text, name).not.toContain('olive');
      expect(response.text, name).not.toMatch(/rawPromptField|rawParamField/);
      // problem+json `errors[]` carry {path, message} about the request, checked by the text assertions above
      const fields = fieldNames({ ...response.json, errors: undefined });
      expect(fields.filter((field) => FORBIDDEN_FIELDS.test(field)), name).toEqual([]);
    }
  });

  it.skipIf(skip)('every operation DTO has exactly the fields of OperationDtoSchema, every notification those of NotificationDtoSchema', () => {
    const operationFields = Object.keys(OperationDtoSchema.shape).sort();
    const dtos = responses.flatMap(([, r]) => (r.status >= 400 ? [] : Array.isArray(r.json.items) ? r.json.items : [r.json]));
    const operations = dtos.filter((dto: Record<string, unknown>) => 'id' in dto);
    const notifications = dtos.filter((dto: Record<string, unknown>) => 'operationId' in dto);
    expect(operations.length).toBeGreaterThanOrEqual(5);
    expect(notifications).toHaveLength(1);
    for (const dto of operations) {
      expect(Object.keys(dto).sort()).toEqual(operationFields);
      expect(OperationDtoSchema.safeParse(dto).success).toBe(true);
    }
    for (const dto of notifications) {
      expect(Object.keys(dto).sort()).toEqual(Object.keys(NotificationDtoSchema.shape).sort());
    }
  });
});
