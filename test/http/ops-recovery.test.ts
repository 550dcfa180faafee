import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNREGISTERED_RECONCILIATION } from '../../lib/recovery/recovery-modules.js';
import { apiEvent, lambdaContext, OPERATOR_CLAIMS, parseResponse, type ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { buildLedgerFixture, HIDDEN, LONG_LEASE_MS, TEST_RECONCILIATION, testRecoveryModules, type LedgerFixture } from '../recovery/ops-fixtures.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** Who calls: the verified `sub`, and what the JWT authorizer passes as the `scope` claim and the `scopes` list. */
interface Caller {
  readonly sub: string;
  readonly scope?: string;
  readonly scopes?: string[] | null;
}

const OPERATOR: Caller = { sub: 'ops-alice', scope: 'openid ops:read profile' };

/** The callers who must not see the route, and why. */
const NON_OPERATORS: ReadonlyArray<readonly [string, Caller]> = [
  ['an owner whose token has no scope claim', { sub: 'alice' }],
  ['a token whose scope is ops:write only', { sub: 'ops-bob', scope: 'ops:write' }],
  ['near misses of ops:read', { sub: 'ops-carol', scope: 'ops:reader xops:read ops:read:all OPS:READ ops' }],
  ['scopes listed without ops:read', { sub: 'ops-dave', scope: 'openid', scopes: ['openid', 'ops:write'] }],
  ['an empty scope claim', { sub: 'ops-erin', scope: '' }],
];

const UNRESOLVED_KEYS = ['id', 'module', 'kind', 'state', 'effectClass', 'fence', 'checkpointCount', 'leaseExpiresAt', 'createdAt', 'updatedAt', 'stale', 'reconciliation', 'chain'];

describe.each(DIALECTS)('GET /api/ops/recovery on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let ops: LedgerFixture;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect, { recoveryModules: testRecoveryModules() });
    ops = await buildLedgerFixture(app.db);
  });
  afterAll(async () => app?.drop());

  /** Calls the API as `caller`, with the claims the JWT authorizer would pass. */
  const call = async (caller: Caller, path: string, method = 'GET'): Promise<ParsedResponse> => {
    // Every caller passes the operator rule: these cases are about the scope.
    const event = apiEvent({ method, path, owner: caller.sub, claims: OPERATOR_CLAIMS });
    const jwt = event.requestContext.authorizer.jwt;
    if (caller.scope !== undefined) jwt.claims.scope = caller.scope;
    jwt.scopes = caller.scopes ?? (caller.scope ? caller.scope.split(' ') : null);
    return parseResponse(await app.handler(event, lambdaContext()));
  };
  const unresolvedSet = () => [ops.staleRunning, ops.recoveryRequired, ops.recovering, ops.outcomeUnknown].sort();

  it.skipIf(skip).each(NON_OPERATORS)('%s: 404 problem+json for every method and query, exactly as for a path that does not exist', async (_name, caller) => {
    const missing = await call(caller, '/api/ops/nowhere');
    expect(missing.status).toBe(404);
    for (const [method, path] of [
      ['GET', '/api/ops/recovery'],
      ['GET', '/api/ops/recovery/'],
      ['GET', '/api/ops/recovery?state=bogus&limit=0'],
      ['POST', '/api/ops/recovery'],
      ['DELETE', '/api/ops/recovery'],
    ] as const) {
      const response = await call(caller, path, method);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.json).toEqual(missing.json);
      expect(response.headers).not.toHaveProperty('allow');
    }
  });

  it.skipIf(skip)('with ops:read it lists exactly the unresolved set, each with its module’s reconciliation action', async () => {
    const response = await call(OPERATOR, '/api/ops/recovery');
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const items: any[] = response.json.items;
    expect(items.map((item) => item.id).sort()).toEqual(unresolvedSet());
    const byId = new Map(items.map((item) => [item.id, item]));
    expect(byId.get(ops.staleRunning)).toMatchObject({ state: 'running', stale: true, effectClass: 'forward_only', fence: 1, checkpointCount: 2, reconciliation: UNREGISTERED_RECONCILIATION });
    expect(byId.get(ops.recoveryRequired)).toMatchObject({ state: 'recovery_required', stale: false, fence: 2, reconciliation: TEST_RECONCILIATION['test.objects'] });
    expect(byId.get(ops.recovering)).toMatchObject({ state: 'recovering', stale: false, fence: 1, checkpointCount: 3, reconciliation: TEST_RECONCILIATION['test.objects'] });
    expect(byId.get(ops.outcomeUnknown)).toMatchObject({ state: 'outcome_unknown', stale: false, fence: 2, reconciliation: TEST_RECONCILIATION['test.queue'] });
    const created = items.map((item) => item.createdAt);
    expect(created).toEqual([...created].sort());
    for (const item of items) expect(item.chain).toEqual({ ok: true, reason: null });
  });

  it.skipIf(skip)('the scopes list the JWT authorizer passes grants it as well as the scope claim', async () => {
    const response = await call({ sub: 'ops-frank', scopes: ['ops:read'] }, '/api/ops/recovery');
    expect(response.status).toBe(200);
    expect(response.json.items.map((item: any) => item.id).sort()).toEqual(unresolvedSet());
  });

  it.skipIf(skip)('state filters: each unresolved state alone; running means stale running only', async () => {
    const only = async (state: string) => (await call(OPERATOR, `/api/ops/recovery?state=${state}`)).json.items.map((item: any) => item.id);
    expect(await only('running')).toEqual([ops.staleRunning]);
    expect(await only('recovery_required')).toEqual([ops.recoveryRequired]);
    expect(await only('recovering')).toEqual([ops.recovering]);
    expect(await only('outcome_unknown')).toEqual([ops.outcomeUnknown]);
  });

  it.skipIf(skip)('limit keeps the oldest items', async () => {
    const all = (await call(OPERATOR, '/api/ops/recovery?limit=100')).json.items;
    const two = (await call(OPERATOR, '/api/ops/recovery?limit=2')).json.items;
    expect(two).toEqual(all.slice(0, 2));
  });

  it.skipIf(skip).each([
    ['a terminal state', 'state=succeeded'],
    ['an unknown state', 'state=bogus'],
    ['limit 0', 'limit=0'],
    ['limit 101', 'limit=101'],
    ['limit 1e2', 'limit=1e2'],
    ['an unknown parameter', 'owner=alice'],
  ])('for an operator, %s is a 400', async (_name, query) => {
    const response = await call(OPERATOR, `/api/ops/recovery?${query}`);
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ code: 'validation_failed' });
  });

  it.skipIf(skip)('an operator using another method gets 405 with Allow: GET', async () => {
    const response = await call(OPERATOR, '/api/ops/recovery', 'POST');
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('GET');
  });

  it.skipIf(skip)('items carry exactly the documented fields: no idempotency key, lease owner, request hash, plan or evidence', async () => {
    const response = await call(OPERATOR, '/api/ops/recovery');
    for (const item of response.json.items) expect(Object.keys(item).sort()).toEqual([...UNRESOLVED_KEYS].sort());
    expect(response.text).not.toContain(HIDDEN);
    const rows = await app.db.store.db.selectFrom('recovery_operations').select(['request_hash', 'chain_head_hash']).execute();
    for (const row of rows) {
      expect(response.text).not.toContain(row.request_hash);
      expect(response.text).not.toContain(row.chain_head_hash);
    }
  });

  it.skipIf(skip)('once the holders’ leases expire on the database clock every item is stale, and the running one joins the list', async () => {
    app.db.clock.advance(LONG_LEASE_MS + 1);
    const items: any[] = (await call(OPERATOR, '/api/ops/recovery')).json.items;
    expect(items.map((item) => item.id).sort()).toEqual([...unresolvedSet(), ops.liveRunning].sort());
    expect(items.every((item) => item.stale)).toBe(true);
  });

  it.skipIf(skip)('an item whose hash chain was edited carries the verdict: ok false and the first break', async () => {
    await app.db.store.db.updateTable('recovery_checkpoints').set({ evidence: '{"edited":true}' }).where('operation_id', '=', ops.recovering).where('seq', '=', 1).execute();
    const items: any[] = (await call(OPERATOR, '/api/ops/recovery')).json.items;
    expect(items.find((item) => item.id === ops.recovering)?.chain).toEqual({ ok: false, reason: 'hash does not match content' });
    expect(items.filter((item) => item.id !== ops.recovering).every((item) => item.chain.ok)).toBe(true);
  });
});
