import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { ProblemSchema } from '../../lib/http/problem-details.js';
import type { ApiEventInput } from '../support/api-events.js';
import { expectCapacityMatchesActive } from '../support/capacity-invariant.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** `test.claimable`: 2 admissions at once per owner, one more every 30 s; capacity far above it. */
const CAPACITY = capacityPolicy({ perOwner: 100, global: 1000, retryAfterSeconds: 7 }, { taskTypes: { 'test.claimable': { rate: { burst: 2, perSeconds: 60 } } } });

const admit = (owner: string, key: string): ApiEventInput => ({
  method: 'POST',
  path: '/api/operations',
  owner,
  headers: { 'idempotency-key': key },
  body: { taskType: 'test.claimable', subject: { type: 'document', id: key } },
});

describe.each(DIALECTS)('admission rate limits over HTTP on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect, { capacity: CAPACITY });
  });
  afterAll(async () => app?.drop());

  it.skipIf(skip)('over the rate: 429 problem+json rate_limited with Retry-After, nothing written; a replay is still 200; after Retry-After seconds 202', async () => {
    expect((await app.call(admit('alice', 'r-1'))).status).toBe(202);
    expect((await app.call(admit('alice', 'r-2'))).status).toBe(202);
    const sent = app.wakeups.sent.length;

    const refused = await app.call(admit('alice', 'r-3'));
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.headers['retry-after']).toBe('30');
    const problem = ProblemSchema.parse(refused.json);
    expect(problem).toMatchObject({ status: 429, code: 'rate_limited', type: 'https://durable-ops.dev/problems/rate-limited', title: 'Too many admissions' });
    // A fixed sentence: neither the rate nor the tokens left.
    expect(Object.keys(problem).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    expect(problem.detail).not.toMatch(/\d/);
    expect(await app.countOperations('alice')).toBe(2);
    expect(app.wakeups.sent.length).toBe(sent);
    await expectCapacityMatchesActive(app.db.store);

    const replay = await app.call(admit('alice', 'r-1'));
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');

    // Another owner has a bucket of their own.
    expect((await app.call(admit('bob', 'r-3'))).status).toBe(202);

    app.db.clock.advance(Number(refused.headers['retry-after']) * 1000);
    expect((await app.call(admit('alice', 'r-3'))).status).toBe(202);
    expect((await app.call(admit('alice', 'r-4'))).headers['retry-after']).toBe('30');
  });
});
