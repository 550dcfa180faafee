import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_ROUTES } from '../../lib/http/operator-routes.js';
import { OPS_READ_SCOPE, OPS_WRITE_SCOPE } from '../../lib/http/auth.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** Every operator route with a concrete path (ids that exist nowhere). */
const ROUTES = OPERATOR_ROUTES.map((route) => ({ method: route.method, scope: route.scope, path: route.path.replace('{id}', randomUUID()) }));

/** Callers who must see none of the operator routes. */
const OUTSIDERS: ReadonlyArray<readonly [string, string | undefined]> = [
  ['an owner whose token has no scope claim', undefined],
  ['an empty scope claim', ''],
  ['near misses of both scopes', 'ops:reader xops:read OPS:WRITE ops:write:all ops'],
];

describe.each(DIALECTS)('operator console routes: who may see them, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let missing: { status: number; json: unknown };

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect);
    missing = await app.call({ method: 'GET', path: '/api/ops/nowhere', owner: 'someone' });
  });
  afterAll(async () => app?.drop());

  const expectHidden = async (method: string, path: string, scope: string | undefined) => {
    const response = await app.call({ method, path, owner: 'caller', scope, body: method === 'POST' ? {} : undefined });
    expect(response.status, `${method} ${path}`).toBe(404);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json, `${method} ${path}`).toEqual(missing.json);
    expect(response.headers).not.toHaveProperty('allow');
  };

  it.skipIf(skip).each(OUTSIDERS)('%s: every operator route, under every method, is a 404 exactly like an unknown path', async (_name, scope) => {
    expect(missing.status).toBe(404);
    for (const route of ROUTES) for (const method of ['GET', 'POST', 'DELETE']) await expectHidden(method, route.path, scope);
  });

  it.skipIf(skip)('ops:read alone: the GET routes answer, every POST route is a 404 exactly like an unknown path', async () => {
    for (const route of ROUTES) {
      if (route.method === 'POST') {
        await expectHidden('POST', route.path, OPS_READ_SCOPE);
        await expectHidden('GET', route.path, OPS_READ_SCOPE);
      } else {
        const response = await app.call({ method: 'GET', path: route.path, owner: 'ops-reader', scope: OPS_READ_SCOPE });
        expect(response.json?.code, `GET ${route.path}`).not.toBe('route_not_found');
      }
    }
  });

  it.skipIf(skip)('ops:write alone: the POST routes answer, every GET route is a 404 exactly like an unknown path', async () => {
    for (const route of ROUTES) {
      if (route.method === 'GET') {
        await expectHidden('GET', route.path, OPS_WRITE_SCOPE);
      } else {
        const response = await app.call({ method: 'POST', path: route.path, owner: 'ops-writer', scope: OPS_WRITE_SCOPE, body: {} });
        expect(response.json?.code, `POST ${route.path}`).not.toBe('route_not_found');
      }
    }
  });

  it.skipIf(skip)('the routes’ scopes: GET needs ops:read, POST needs ops:write', () => {
    for (const route of ROUTES) expect(route.scope, `${route.method} ${route.path}`).toBe(route.method === 'GET' ? OPS_READ_SCOPE : OPS_WRITE_SCOPE);
  });

  it.skipIf(skip)('an operator holding both scopes who uses another method gets 405 with the method that exists', async () => {
    for (const route of ROUTES) {
      const other = route.method === 'GET' ? 'POST' : 'GET';
      const response = await app.call({ method: other, path: route.path, owner: 'ops-both', scope: `${OPS_READ_SCOPE} ${OPS_WRITE_SCOPE}`, body: other === 'POST' ? {} : undefined });
      expect(response.status, `${other} ${route.path}`).toBe(405);
      expect(response.headers.allow).toBe(route.method);
    }
  });
});
