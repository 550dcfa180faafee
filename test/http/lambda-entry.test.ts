import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiEvent, lambdaContext, parseResponse } from '../support/api-events.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('functions/api.ts Lambda entry on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let db: TestDatabase;
  const saved = { ...process.env };
  beforeAll(async () => {
    if (skip) return;
    db = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    process.env = saved;
    await db?.drop();
  });

  it.skipIf(skip)('importing it builds nothing; it refuses an unauthenticated event before reading config, then serves from the environment', async () => {
    process.env = { ...saved, DATABASE_URL: 'not-a-database-url' };
    vi.resetModules();
    const { handler } = await import('../../functions/api.js');
    const refused = parseResponse(await handler(apiEvent({ method: 'GET', path: '/api/operations', owner: null }), lambdaContext()));
    expect(refused.status).toBe(401);

    process.env = {
      ...saved,
      DATABASE_URL: db.url,
      DB_POOL_SIZE: '2',
      SQS_QUEUE_URL: 'http://127.0.0.1:9/000000000000/durable-ops-wakeup',
      SQS_ENDPOINT: 'http://127.0.0.1:9',
    };
    const served = parseResponse(await handler(apiEvent({ method: 'GET', path: '/api/operations', owner: 'alice' }), lambdaContext()));
    expect(served.status).toBe(200);
    expect(served.json).toEqual({ items: [], nextCursor: null });
  });
});
