import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotificationPageDtoSchema, OperationPageDtoSchema } from '../../lib/http/page-dto.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

describe.each(DIALECTS)('GET /api/operations and /api/notifications on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  const ids: string[] = [];
  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    for (let i = 0; i < 5; i++) {
      const response = await app.call({
        method: 'POST',
        path: '/api/operations',
        owner: 'lister',
        headers: { 'idempotency-key': `list-${i}` },
        body: { taskType: 'demo.wait', subject: { type: 'document', id: `doc-${i}` }, params: { durationMs: 10 } },
      });
      ids.push(response.json.id as string);
    }
    await app.call({ method: 'POST', path: `/api/operations/${ids[0]}/cancel`, owner: 'lister' });
  });
  afterAll(async () => app?.drop());

  const list = (query: string, owner = 'lister') => app.call({ method: 'GET', path: `/api/operations${query}`, owner });

  it.skipIf(skip)('pages with limit and cursor visit every operation once, newest first, then end with nextCursor null', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.status).toBe(200);
      const page = OperationPageDtoSchema.parse(response.json);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(5);
    expect([...seen].sort()).toEqual([...ids].sort());
    const all = await list('');
    expect(all.json.items.map((item: { id: string }) => item.id)).toEqual(seen);
  });

  it.skipIf(skip)('filters by status and task type', async () => {
    const cancelled = await list('?status=cancelled');
    expect(cancelled.json.items.map((item: { id: string }) => item.id)).toEqual([ids[0]]);
    const other = await list('?taskType=test.claimable');
    expect(other.json).toEqual({ items: [], nextCursor: null });
  });

  it.skipIf(skip)('shows only the caller’s operations', async () => {
    const response = await list('', 'stranger');
    expect(response.json).toEqual({ items: [], nextCursor: null });
  });

  it.skipIf(skip).each([
    '?limit=0',
    '?limit=101',
    '?limit=abc',
    '?limit=1e2',
    '?limit=0x10',
    '?limit=-1',
    '?cursor=not-a-cursor',
    `?cursor=${Buffer.from('["x","y"]').toString('base64url')}`,
    '?status=exploded',
    '?unknown=1',
  ])(
    '%s answers 400 problem+json',
    async (query) => {
      const response = await list(query);
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.json).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(response.json.errors.length).toBeGreaterThan(0);
    },
  );

  it.skipIf(skip)('limit 1 and 100 are accepted', async () => {
    expect((await list('?limit=1')).json.items).toHaveLength(1);
    expect((await list('?limit=100')).json.items).toHaveLength(5);
  });

  it.skipIf(skip)('notifications list the owner’s terminal transitions and reject limit 0', async () => {
    const response = await app.call({ method: 'GET', path: '/api/notifications?limit=10', owner: 'lister' });
    expect(response.status).toBe(200);
    const page = NotificationPageDtoSchema.parse(response.json);
    expect(page.items.map((item) => [item.operationId, item.status])).toEqual([[ids[0], 'cancelled']]);
    expect((await app.call({ method: 'GET', path: '/api/notifications', owner: 'stranger' })).json.items).toEqual([]);
    expect((await app.call({ method: 'GET', path: '/api/notifications?limit=0', owner: 'lister' })).status).toBe(400);
  });
});
