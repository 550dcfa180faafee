import { runCli } from '../support/run-script.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

/** Runs `durable-ops owner …` against `databaseUrl`. */
const ownerCli = (databaseUrl: string, args: readonly string[]) => runCli(['owner', ...args], databaseUrl);

describe.each(DIALECTS)('operator CLI `durable-ops owner` on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const settingsOf = async (owner: string) => (await app.call({ method: 'GET', path: '/api/me/settings', owner })).json;

  it.skipIf(skip)('set-plan bob pro: the API shows plan pro for bob, keeps his own choices, and nobody else changes', { timeout: 60_000 }, async () => {
    await app.call({ method: 'PATCH', path: '/api/me/settings', owner: 'bob', body: { privacyMode: 'external_allowed' } });

    const set = await ownerCli(app.db.url, ['set-plan', 'bob', 'pro']);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(set.stdout)).toEqual({ plan: 'pro', aiEnabled: true, privacyMode: 'external_allowed' });
    expect(await settingsOf('bob')).toEqual({ plan: 'pro', aiEnabled: true, privacyMode: 'external_allowed' });
    expect(await settingsOf('alice')).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'local_only' });

    const shown = await ownerCli(app.db.url, ['show', 'bob']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({ plan: 'pro', aiEnabled: true, privacyMode: 'external_allowed' });
  });

  it.skipIf(skip)('show for an owner without settings prints the defaults and writes nothing', { timeout: 60_000 }, async () => {
    const shown = await ownerCli(app.db.url, ['show', 'nobody-yet']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({ plan: 'free', aiEnabled: true, privacyMode: 'local_only' });
    const rows = await app.db.store.db.selectFrom('owner_settings').select('owner_user_id').where('owner_user_id', '=', 'nobody-yet').execute();
    expect(rows).toEqual([]);
  });
});

describe('operator CLI usage errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-owner-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each<[string, string[]]>([
    ['no command', []],
    ['an unknown command', ['promote', 'carol']],
    ['set-plan without a plan', ['set-plan', 'carol']],
    ['an extra argument', ['show', 'carol', 'pro']],
    ['an option', ['show', 'carol', '--force']],
    ['an invalid plan name', ['set-plan', 'carol', 'Pro Plan']],
    ['a sub of 129 characters', ['show', 'u'.repeat(129)]],
  ])('%s exits 2 with the usage text, before opening the database', { timeout: 60_000 }, async (_name, args) => {
    const database = join(dir, 'never-opened.sqlite');
    const run = await ownerCli(`sqlite:${database}`, args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('usage: durable-ops owner show <sub>');
    expect(existsSync(database)).toBe(false);
  });
});
