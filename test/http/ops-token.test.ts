import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../lib/logger.js';
import { startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { CLI_FROM_SOURCES } from '../support/run-script.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { buildLedgerFixture, testRecoveryModules, type LedgerFixture } from '../recovery/ops-fixtures.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRET = 'an-ops-token-test-secret-of-32-characters';

/** Mints a dev token exactly as `npm run token -- <args>` (`durable-ops token`) does, signed with {@link SECRET}. */
function mintToken(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCES, 'token', ...args],
      { cwd: ROOT, env: { ...process.env, DEV_JWT_SECRET: SECRET }, timeout: 30_000 },
      (error, stdout) => (error ? reject(error) : resolve(stdout.trim())),
    );
  });
}

const tokens: Record<'operator' | 'owner' | 'writer', string> = { operator: '', owner: '', writer: '' };

beforeAll(async () => {
  [tokens.operator, tokens.owner, tokens.writer] = await Promise.all([
    mintToken(['ops-alice', '--scope', 'ops:read']),
    mintToken(['alice']),
    mintToken(['ops-bob', '--scope', 'ops:write']),
  ]);
}, 60_000);

describe.each(DIALECTS)('`npm run token -- ops-alice --scope ops:read` against the local stack on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let server: LocalHttpServer;
  let ops: LedgerFixture;

  beforeAll(async () => {
    if (skip) return;
    app = await createApiTestApp(dialect, { recoveryModules: testRecoveryModules() });
    ops = await buildLedgerFixture(app.db);
    server = await startLocalHttpServer({ port: 0, handler: app.handler, devJwtSecret: SECRET, logger: silentLogger });
  });
  afterAll(async () => {
    await server?.close();
    await app?.drop();
  });

  const get = (token: string) => fetch(`${server.url}/api/ops/recovery`, { headers: { authorization: `Bearer ${token}` } });

  it.skipIf(skip)('the minted operator token lists the unresolved operations', async () => {
    const response = await get(tokens.operator);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { items: Array<{ id: string }> };
    expect(body.items.map((item) => item.id).sort()).toEqual([ops.staleRunning, ops.recoveryRequired, ops.recovering, ops.outcomeUnknown].sort());
  });

  it.skipIf(skip).each([
    ['a token without a scope', 'owner'],
    ['a token with ops:write only', 'writer'],
  ] as const)('%s gets 404 problem+json', async (_name, which) => {
    const response = await get(tokens[which]);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
  });
});
