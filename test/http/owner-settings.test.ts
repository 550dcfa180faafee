import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProblemSchema } from '../../lib/http/problem-details.js';
import { DEFAULT_OWNER_SETTINGS, OwnerSettingsDtoSchema } from '../../lib/owners/owner-settings.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const PATH = '/api/me/settings';

describe.each(DIALECTS)('GET and PATCH /api/me/settings on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const read = async (owner: string) => {
    const response = await app.call({ method: 'GET', path: PATH, owner });
    expect(response.status).toBe(200);
    return OwnerSettingsDtoSchema.parse(response.json);
  };
  const patch = (owner: string, body: unknown) => app.call({ method: 'PATCH', path: PATH, owner, headers: { 'content-type': 'application/json' }, body });

  it.skipIf(skip)('an owner who never changed anything reads the documented defaults: free, AI enabled, local_only', async () => {
    const response = await app.call({ method: 'GET', path: PATH, owner: 'newcomer' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.json).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'local_only' });
    expect(response.json).toEqual(DEFAULT_OWNER_SETTINGS);
  });

  it.skipIf(skip)('PATCH changes aiEnabled and privacyMode, answers the new settings, and GET reflects them', async () => {
    const first = await patch('alice', { aiEnabled: false });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ plan: 'free', aiEnabled: false, privacyMode: 'local_only' });
    expect(await read('alice')).toEqual({ plan: 'free', aiEnabled: false, privacyMode: 'local_only' });

    const second = await patch('alice', { privacyMode: 'external_allowed' });
    expect(second.status).toBe(200);
    expect(await read('alice')).toEqual({ plan: 'free', aiEnabled: false, privacyMode: 'external_allowed' });

    const both = await patch('alice', { aiEnabled: true, privacyMode: 'local_only' });
    expect(both.json).toEqual(DEFAULT_OWNER_SETTINGS);
    expect(await read('alice')).toEqual(DEFAULT_OWNER_SETTINGS);
  });

  it.skipIf(skip)("one owner's PATCH leaves every other owner's settings untouched", async () => {
    await patch('carol', { privacyMode: 'external_allowed' });
    expect((await patch('dave', { aiEnabled: false })).status).toBe(200);
    expect(await read('carol')).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'external_allowed' });
    expect(await read('erin')).toEqual(DEFAULT_OWNER_SETTINGS);
  });

  const invalid: Array<[string, unknown]> = [
    ['the plan (an entitlement only an operator sets)', { plan: 'pro' }],
    ['the plan next to an allowed change', { aiEnabled: false, plan: 'pro' }],
    ['an unknown key', { theme: 'dark-mode-secret' }],
    ['an unknown key next to an allowed change', { privacyMode: 'external_allowed', theme: 'dark-mode-secret' }],
    ['an empty object', {}],
    ['aiEnabled as a string', { aiEnabled: 'false' }],
    ['aiEnabled as null', { aiEnabled: null }],
    ['an unknown privacy mode', { privacyMode: 'everywhere' }],
    ['a JSON array', [{ aiEnabled: false }]],
    ['a body that is not JSON', 'aiEnabled=false'],
    ['no body', undefined],
  ];

  it.skipIf(skip).each(invalid)('PATCH with %s answers 400 problem+json and changes nothing', async (_name, body) => {
    await patch('frank', { aiEnabled: false, privacyMode: 'external_allowed' });
    const before = await read('frank');
    const response = await patch('frank', body);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(ProblemSchema.parse(response.json)).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(response.text).not.toContain('dark-mode-secret');
    expect(await read('frank')).toEqual(before);
  });

  it.skipIf(skip)('a refused PATCH by an owner with no settings yet leaves them on the defaults', async () => {
    expect((await patch('grace', { plan: 'pro' })).status).toBe(400);
    expect((await patch('grace', {})).status).toBe(400);
    expect(await read('grace')).toEqual(DEFAULT_OWNER_SETTINGS);
  });
});
