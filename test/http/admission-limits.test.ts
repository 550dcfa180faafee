import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { ProblemSchema } from '../../lib/http/problem-details.js';
import type { ApiEventInput } from '../support/api-events.js';
import { expectCapacityMatchesActive } from '../support/capacity-invariant.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** Per owner 2, globally 100 (3 for `test.claimable`), `Retry-After: 7`. */
const CAPACITY = capacityPolicy({ perOwner: 2, global: 100, retryAfterSeconds: 7 }, { taskTypes: { 'test.claimable': { global: 3 } } });

const admit = (owner: string, key: string, taskType = 'demo.wait'): ApiEventInput => ({
  method: 'POST',
  path: '/api/operations',
  owner,
  headers: { 'idempotency-key': key },
  body: { taskType, subject: { type: 'document', id: key }, ...(taskType === 'demo.wait' ? { params: { durationMs: 1_000 } } : {}) },
});

describe.each(DIALECTS)('admission limits and entitlement over HTTP on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect, { capacity: CAPACITY });
  });
  afterAll(async () => app?.drop());

  const cancel = (owner: string, id: string) => app.call({ method: 'POST', path: `/api/operations/${id}/cancel`, owner });
  const wakeupsFor = (id: string) => app.wakeups.sent.filter((m) => m.operationId === id).length;
  const expectCapacityProblem = (response: Awaited<ReturnType<ApiTestApp['call']>>) => {
    expect(response.status).toBe(429);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.headers['retry-after']).toBe('7');
    const problem = ProblemSchema.parse(response.json);
    expect(problem).toMatchObject({ status: 429, code: 'capacity_exhausted', type: 'https://durable-ops.dev/problems/capacity-exhausted' });
    // Only the fixed sentence: no limit, no count of this or any other owner's operations.
    expect(Object.keys(problem).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    expect(problem.detail).not.toMatch(/\d/);
  };

  it.skipIf(skip)('with a per-owner limit of 2, the third admission answers 429 + Retry-After: 7 and writes no row, no slot, no wake-up', async () => {
    const accepted = [await app.call(admit('alice', 'a-1')), await app.call(admit('alice', 'a-2'))];
    expect(accepted.map((r) => r.status)).toEqual([202, 202]);
    const sentBefore = app.wakeups.sent.length;

    expectCapacityProblem(await app.call(admit('alice', 'a-3')));
    expect(await app.countOperations('alice')).toBe(2);
    await expectCapacityMatchesActive(app.db.store);
    expect(app.wakeups.sent.length).toBe(sentBefore);

    // Another owner has limits of their own.
    expect((await app.call(admit('bob', 'a-3'))).status).toBe(202);
  });

  it.skipIf(skip)('a replay of an admitted key while the owner is full still answers 200 Idempotent-Replayed, not 429', async () => {
    const first = await app.call(admit('carol', 'c-1'));
    expect((await app.call(admit('carol', 'c-2'))).status).toBe(202);
    expectCapacityProblem(await app.call(admit('carol', 'c-3')));

    const replay = await app.call(admit('carol', 'c-1'));
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json.id).toBe(first.json.id);
    expect(await app.countOperations('carol')).toBe(2);
  });

  it.skipIf(skip)('a cancel frees the slot for a new admission; a retry into a full pool answers 429 and leaves the operation cancelled', async () => {
    const first = await app.call(admit('dave', 'd-1'));
    expect((await app.call(admit('dave', 'd-2'))).status).toBe(202);
    expect((await cancel('dave', first.json.id)).json.status).toBe('cancelled');
    expect((await app.call(admit('dave', 'd-3'))).status).toBe(202);

    const sentBefore = wakeupsFor(first.json.id);
    expectCapacityProblem(await app.call({ method: 'POST', path: `/api/operations/${first.json.id}/retry`, owner: 'dave' }));
    const after = await app.call({ method: 'GET', path: `/api/operations/${first.json.id}`, owner: 'dave' });
    expect(after.json).toMatchObject({ status: 'cancelled' });
    expect(wakeupsFor(first.json.id)).toBe(sentBefore);
    await expectCapacityMatchesActive(app.db.store);
  });

  it.skipIf(skip)("a full global pool answers 429 with the same fixed body, revealing nothing of the other owners' operations", async () => {
    const holders: Array<{ owner: string; id: string }> = [];
    for (const [owner, key] of [['g-1', 'g-1'], ['g-1', 'g-2'], ['g-2', 'g-3']] as const) {
      const response = await app.call(admit(owner, key, 'test.claimable'));
      expect(response.status).toBe(202);
      holders.push({ owner, id: response.json.id });
    }

    const refused = await app.call(admit('g-3', 'g-4', 'test.claimable'));
    expectCapacityProblem(refused);
    expect(refused.text).not.toMatch(/g-1|g-2/);
    expect(await app.countOperations('g-3')).toBe(0);
    await expectCapacityMatchesActive(app.db.store);

    // Cancelling frees the global slots again (and leaves the pool empty for the other tests).
    for (const { owner, id } of holders) expect((await cancel(owner, id)).json.status).toBe('cancelled');
    const again = await app.call(admit('g-3', 'g-4', 'test.claimable'));
    expect(again.status).toBe(202);
    await cancel('g-3', again.json.id);
  });

  it.skipIf(skip)('after PATCH aiEnabled:false, admitting demo.wait answers 403 problem+json and writes no row, no slot, no wake-up', async () => {
    expect((await app.call({ method: 'PATCH', path: '/api/me/settings', owner: 'erin', body: { aiEnabled: false } })).status).toBe(200);
    const sentBefore = app.wakeups.sent.length;

    const refused = await app.call(admit('erin', 'e-1'));
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(ProblemSchema.parse(refused.json)).toMatchObject({ status: 403, code: 'not_entitled', type: 'https://durable-ops.dev/problems/not-entitled' });
    expect(await app.countOperations('erin')).toBe(0);
    await expectCapacityMatchesActive(app.db.store);
    expect(app.wakeups.sent.length).toBe(sentBefore);

    // A task type that does not need AI is still admitted, and turning AI back on admits demo.wait again.
    expect((await app.call(admit('erin', 'e-2', 'test.claimable'))).status).toBe(202);
    expect((await app.call({ method: 'PATCH', path: '/api/me/settings', owner: 'erin', body: { aiEnabled: true } })).status).toBe(200);
    expect((await app.call(admit('erin', 'e-1'))).status).toBe(202);
  });

  it.skipIf(skip)('an owner retry after AI was turned off answers 403 and leaves the operation cancelled', async () => {
    const admitted = await app.call(admit('frank', 'f-1'));
    await cancel('frank', admitted.json.id);
    await app.call({ method: 'PATCH', path: '/api/me/settings', owner: 'frank', body: { aiEnabled: false } });

    const refused = await app.call({ method: 'POST', path: `/api/operations/${admitted.json.id}/retry`, owner: 'frank' });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ status: 403, code: 'not_entitled' });
    const after = await app.call({ method: 'GET', path: `/api/operations/${admitted.json.id}`, owner: 'frank' });
    expect(after.json).toMatchObject({ status: 'cancelled' });
  });
});
