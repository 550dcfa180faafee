import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation, failOperation } from '../../lib/operations/lease/lease-operations.js';
import { WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import type { ApiEventInput, ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { RecordingLogger } from '../support/recording-observability.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** A value only the admitted params hold: a response that contains it leaked the params. */
const PARAMS_MARKER = 483_917;

describe.each(DIALECTS)('operator console: operations, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  const logger = new RecordingLogger();
  const responses: ParsedResponse[] = [];
  const leaseTokens: string[] = [];
  const keys: string[] = [];

  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect, { logger });
  });
  afterAll(async () => app?.drop());

  /** Calls the API as an operator holding both scopes; every answer is kept for the leak check at the end. */
  const ops = async (method: string, path: string, body?: unknown): Promise<ParsedResponse> => {
    const response = await app.call({ method, path, owner: 'ops-alice', scope: 'ops:read ops:write', body });
    responses.push(response);
    return response;
  };
  const owner = (input: Omit<ApiEventInput, 'owner'>, who = 'alice') => app.call({ ...input, owner: who });
  const sweep = () =>
    runSweepOnce({ store: app.db.store, policy: app.deps.policy, wakeups: app.wakeups, logger: app.deps.logger, metrics: app.deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
  const admitAndClaim = async (who: string, key: string) => {
    keys.push(key);
    const claimed = await app.admitAndClaim(who, key);
    leaseTokens.push(claimed.claim.leaseToken);
    return claimed;
  };

  it.skipIf(skip)('claimed → lease lost (clock past the lease, sweep) → reclaimed → succeeded: the timeline tells each step', async () => {
    const { operationId, claim } = await admitAndClaim('alice', 'timeline-1');
    app.db.clock.advance(claim.leaseMs + 1_000);
    expect(await sweep()).toMatchObject({ leasesRetried: 1 });
    const again = await claimNextOperation(new WorkerScope(app.db.store), app.deps);
    expect(again?.operationId).toBe(operationId);
    leaseTokens.push(again!.leaseToken);
    await completeOperation(enterOwnerScope(new WorkerScope(app.db.store), again!), again!);

    const response = await ops('GET', `/api/ops/operations/${operationId}`);
    expect(response.status).toBe(200);
    const { operation, timeline, notifications } = response.json;
    expect(operation).toMatchObject({ id: operationId, ownerUserId: 'alice', status: 'succeeded', attempt: 2, retryCount: 0 });
    expect(timeline.map((e: any) => [e.kind, e.from, e.to, e.attempt, e.cycle, e.failureCode])).toEqual([
      ['admitted', null, 'queued', 0, 0, null],
      ['claimed', 'queued', 'running', 1, 0, null],
      ['lease_lost', 'running', 'waiting_for_retry', 1, 0, 'lease_expired'],
      ['claimed', 'waiting_for_retry', 'running', 2, 0, null],
      ['succeeded', 'running', 'succeeded', 2, 0, null],
    ]);
    const times = timeline.map((e: any) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The lease was lost on the advanced database clock: the event says when, in the operation's own time.
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(claim.leaseMs);
    expect(timeline[4].at).toBe(operation.updatedAt);
    expect(notifications).toEqual([{ cycle: 0, status: 'succeeded', failureCode: null, createdAt: expect.any(String) }]);
  });

  it.skipIf(skip)('a failure, the owner’s retry, an operator’s cancel and an operator’s retry each appear, with their cycles and notifications', async () => {
    const { operationId, claim, scope } = await admitAndClaim('bob', 'timeline-2');
    expect(await failOperation(scope, claim, { kind: 'permanent', message: 'broken input' }, 0, 60_000)).toEqual({ status: 'failed', failureCode: 'permanent_error' });
    expect((await owner({ method: 'POST', path: `/api/operations/${operationId}/retry` }, 'bob')).status).toBe(202);

    const cancelled = await ops('POST', `/api/ops/operations/${operationId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ id: operationId, status: 'cancelled', ownerUserId: 'bob', retryCount: 1 });
    const retried = await ops('POST', `/api/ops/operations/${operationId}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.json).toMatchObject({ id: operationId, status: 'queued', ownerUserId: 'bob', retryCount: 2, attempt: 0 });
    expect(app.wakeups.sent.filter((m) => m.operationId === operationId).map((m) => m.reason)).toEqual(['admitted', 'owner_retry', 'owner_retry']);

    const { timeline, notifications } = (await ops('GET', `/api/ops/operations/${operationId}`)).json;
    expect(timeline.map((e: any) => [e.kind, e.cycle, e.failureCode])).toEqual([
      ['admitted', 0, null],
      ['claimed', 0, null],
      ['failed', 0, 'permanent_error'],
      ['owner_retry', 1, null],
      ['cancelled', 1, null],
      ['owner_retry', 2, null],
    ]);
    expect(notifications.map((n: any) => [n.cycle, n.status, n.failureCode])).toEqual([
      [0, 'failed', 'permanent_error'],
      [1, 'cancelled', null],
    ]);
    // Each operator action is attributed to the operator in the logs, next to the owner-level line.
    const actions = logger.lines.filter((l) => l.fields.event === 'operator_action' && l.fields.operationId === operationId).map((l) => l.fields);
    expect(actions).toEqual([
      { event: 'operator_action', action: 'cancel', operationId, operator: 'ops-alice', status: 'cancelled' },
      { event: 'operator_action', action: 'retry', operationId, operator: 'ops-alice', status: 'queued' },
    ]);
    // Leave nothing claimable behind for the next test's claim.
    expect((await ops('POST', `/api/ops/operations/${operationId}/cancel`)).json.status).toBe('cancelled');
  });

  it.skipIf(skip)('an operator’s retry follows the owner’s rules: 409 for an operation that is not failed or cancelled, 404 for an unknown id', async () => {
    const { operationId, claim, scope } = await admitAndClaim('carol', 'timeline-3');
    const running = await ops('POST', `/api/ops/operations/${operationId}/retry`);
    expect(running.status).toBe(409);
    await completeOperation(scope, claim);
    expect((await ops('POST', `/api/ops/operations/${operationId}/cancel`)).status).toBe(409);
    expect((await ops('POST', '/api/ops/operations/00000000-0000-4000-8000-000000000000/retry')).status).toBe(404);
    expect((await ops('GET', '/api/ops/operations/not-an-id')).status).toBe(404);
  });

  it.skipIf(skip)('a waiting operation failed at its deadline shows deadline_passed', async () => {
    keys.push('deadline-1');
    const admitted = await owner({ method: 'POST', path: '/api/operations', headers: { 'idempotency-key': 'deadline-1' }, body: { taskType: 'demo.wait', subject: { type: 'doc', id: 'd9' }, params: { durationMs: PARAMS_MARKER } } });
    expect(admitted.status).toBe(202);
    app.db.clock.advance(app.deps.policy.deadlineMs + 1_000);
    expect(await sweep()).toMatchObject({ deadlinesFailed: 1 });
    const { timeline } = (await ops('GET', `/api/ops/operations/${admitted.json.id}`)).json;
    expect(timeline.map((e: any) => [e.kind, e.from, e.to, e.failureCode])).toEqual([
      ['admitted', null, 'queued', null],
      ['deadline_passed', 'queued', 'failed', 'deadline_exceeded'],
    ]);
  });

  it.skipIf(skip)('the listing shows every owner’s operations newest first, filters by owner and status, and pages with a cursor', async () => {
    const all = await ops('GET', '/api/ops/operations?limit=100');
    expect(all.status).toBe(200);
    expect(new Set(all.json.items.map((item: any) => item.ownerUserId))).toEqual(new Set(['alice', 'bob', 'carol']));
    const created = all.json.items.map((item: any) => item.createdAt);
    expect(created).toEqual([...created].sort().reverse());
    const bobs = await ops('GET', '/api/ops/operations?ownerUserId=bob&status=cancelled');
    expect(bobs.json.items.map((item: any) => item.ownerUserId)).toEqual(['bob']);
    const first = await ops('GET', '/api/ops/operations?limit=2');
    const second = await ops('GET', `/api/ops/operations?limit=2&cursor=${encodeURIComponent(first.json.nextCursor)}`);
    expect([...first.json.items, ...second.json.items].map((item: any) => item.id)).toEqual(all.json.items.slice(0, 4).map((item: any) => item.id));
    expect((await ops('GET', '/api/ops/operations?limit=0')).status).toBe(400);
  });

  it.skipIf(skip)('the operator view never carries the free-form failure text (only the CLI shows it)', async () => {
    const marker = 'provider said: secret prompt text';
    const row = await app.db.store.db.selectFrom('operations').select('id').executeTakeFirstOrThrow();
    await app.db.store.db.updateTable('operations').set({ failure_message: marker }).where('id', '=', row.id).execute();
    const detail = await ops('GET', `/api/ops/operations/${row.id}`);
    const listing = await ops('GET', '/api/ops/operations?limit=100');
    expect(detail.status).toBe(200);
    expect(detail.json.operation).not.toHaveProperty('failureMessage');
    expect(`${detail.text}${listing.text}`).not.toContain(marker);
  });

  it.skipIf(skip)('no answer holds a lease token, an idempotency key, a request hash or the params', async () => {
    expect(responses.length).toBeGreaterThan(10);
    const rows = await app.db.store.db.selectFrom('operations').select(['request_hash', 'idempotency_key', 'params_json']).execute();
    const secrets = [...leaseTokens, ...keys, ...rows.map((row) => row.request_hash), ...rows.map((row) => row.idempotency_key)];
    for (const response of responses) {
      for (const secret of secrets) expect(response.text).not.toContain(secret);
      expect(response.text).not.toContain(String(PARAMS_MARKER));
      expect(response.text).not.toMatch(/"(leaseToken|lease_token|idempotencyKey|requestHash|params|paramsJson|failureMessage)"/);
    }
    expect(rows.some((row) => row.params_json.includes(String(PARAMS_MARKER)))).toBe(true);
  });
});
