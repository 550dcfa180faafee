import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { DEV_SECRET_FILE, localDataDir, localDevSecret } from '../../lib/local/dev-secret.js';
import { startLocalStack, type LocalStack } from '../../lib/local/local-stack.js';
import { silentLogger } from '../../lib/logger.js';
import { createObservability } from '../../lib/observability/observability.js';
import { CLI_FROM_SOURCES } from '../support/run-script.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const quiet = { ...createObservability(), logger: silentLogger };

/** `npm run token -- <sub>` (`durable-ops token`) for the checkout whose database is `databaseUrl`, no DEV_JWT_SECRET. */
function mintToken(databaseUrl: string, sub: string): Promise<string> {
  const { DEV_JWT_SECRET: _unset, ...env } = process.env;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...CLI_FROM_SOURCES, 'token', sub], { cwd: ROOT, env: { ...env, DATABASE_URL: databaseUrl }, timeout: 30_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout.trim()),
    );
  });
}

const status = async (stack: LocalStack, token: string) =>
  (await fetch(`${stack.url}/api/operations`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => (await r.body?.cancel(), r))).status;

describe('each checkout has its own generated dev secret', () => {
  const root = mkdtempSync(join(tmpdir(), 'durable-ops-dev-secret-'));
  const urlOf = (checkout: string) => `sqlite:${join(root, checkout, '.data', 'durable-ops.sqlite')}`;
  let first: LocalStack;
  let second: LocalStack;

  beforeAll(async () => {
    [first, second] = await Promise.all([
      startLocalStack(loadConfig({ DATABASE_URL: urlOf('one'), PORT: '0', SWEEP_INTERVAL_SECONDS: '60' }), quiet),
      startLocalStack(loadConfig({ DATABASE_URL: urlOf('two'), PORT: '0', SWEEP_INTERVAL_SECONDS: '60' }), quiet),
    ]);
  }, 60_000);
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('a token `npm run token` mints for one checkout verifies on its stack and is a 401 on the other checkout’s', async () => {
    const token = await mintToken(urlOf('one'), 'alice');
    expect(await status(first, token)).toBe(200);
    expect(await status(second, token)).toBe(401);
    expect(await status(second, await mintToken(urlOf('two'), 'alice'))).toBe(200);
  }, 60_000);

  it('the secret is 32 random bytes, base64url, in the data directory with mode 0600, and survives a restart', async () => {
    const file = join(root, 'one', '.data', DEV_SECRET_FILE);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.devJwtSecret);
    expect(first.devJwtSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(first.devJwtSecret, 'base64url')).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(second.devJwtSecret).not.toBe(first.devJwtSecret);
    expect(await localDevSecret(loadConfig({ DATABASE_URL: urlOf('one') }))).toBe(first.devJwtSecret);
  });
});

describe('localDevSecret', () => {
  const root = mkdtempSync(join(tmpdir(), 'durable-ops-dev-secret-unit-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('DEV_JWT_SECRET set explicitly wins, and no file is written', async () => {
    const databaseUrl = `sqlite:${join(root, 'explicit', 'db.sqlite')}`;
    const secret = 'an-explicit-secret-of-at-least-32-characters';
    expect(await localDevSecret({ DATABASE_URL: databaseUrl, DEV_JWT_SECRET: secret })).toBe(secret);
    expect(() => statSync(join(root, 'explicit', DEV_SECRET_FILE))).toThrow();
  });

  it('callers racing on a fresh data directory all get the one secret that was written', async () => {
    const config = { DATABASE_URL: `sqlite:${join(root, 'race', 'db.sqlite')}`, DEV_JWT_SECRET: undefined };
    const secrets = await Promise.all(Array.from({ length: 8 }, () => localDevSecret(config)));
    expect(new Set(secrets).size).toBe(1);
    expect(readFileSync(join(root, 'race', DEV_SECRET_FILE), 'utf8').trim()).toBe(secrets[0]);
  });

  it('a file that holds something else is refused, not replaced', async () => {
    const dir = join(root, 'broken');
    await localDevSecret({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, DEV_JWT_SECRET: undefined });
    writeFileSync(join(dir, DEV_SECRET_FILE), 'not a secret\n');
    await expect(localDevSecret({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, DEV_JWT_SECRET: undefined })).rejects.toThrow(ConfigError);
    expect(readFileSync(join(dir, DEV_SECRET_FILE), 'utf8')).toBe('not a secret\n');
  });

  it('the data directory is the SQLite file’s directory, else .data', () => {
    expect(localDataDir('sqlite:/tmp/x/db.sqlite')).toBe('/tmp/x');
    expect(localDataDir('file:var/db.sqlite')).toBe('var');
    expect(localDataDir('sqlite::memory:')).toBe('.data');
    expect(localDataDir('mysql://root@127.0.0.1:3306/app')).toBe('.data');
  });

});
