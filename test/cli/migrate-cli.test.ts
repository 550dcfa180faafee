/**
 * `durable-ops migrate` guards (README "Operator CLI", "Migrations and rollback"): `--down` never drops a database's
 * tables unasked — `--yes`, or `yes` typed at a terminal — and `--remote` never guesses an AWS region.
 */
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI_FROM_SOURCES, runCli, type ScriptRun } from '../support/run-script.js';
import { createTestDatabase, hasMariadb } from '../support/test-store.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = '/usr/bin/script';

describe('durable-ops migrate --down asks before dropping every table', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'migrate-down-'));
  const file = join(dir, 'stack.sqlite');
  const url = `sqlite:${file}`;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const hasOperationsTable = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'operations'").get() as { n: number };
    } finally {
      db.close();
    }
  };
  /** The CLI on a pseudo-terminal (util-linux `script`), `typed` fed to it as the keyboard would. */
  const runAtTerminal = (typed: string) =>
    new Promise<ScriptRun>((resolve) => {
      const command = [process.execPath, ...CLI_FROM_SOURCES, 'migrate', '--down'].join(' ');
      const child = execFile(SCRIPT, ['-qec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url }, timeout: 30_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(typed);
    });

  beforeEach(async () => {
    expect((await runCli(['migrate'], url)).code).toBe(0);
    expect(hasOperationsTable()).toEqual({ n: 1 });
  });

  it('on SQLite without a terminal and without --yes: exit 2 with one line asking for --yes, every table still there', async () => {
    const run = await runCli(['migrate', '--down'], url);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('migrate --down drops every table of this SQLite database (DATABASE_URL) and all its history. Add --yes to confirm.');
    expect(hasOperationsTable()).toEqual({ n: 1 });
  });

  it('with --yes: every migration rolled back', async () => {
    const run = await runCli(['migrate', '--down', '--yes'], url);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Down\s+Success\s+20261130000100_create_operations/);
    expect(hasOperationsTable()).toEqual({ n: 0 });
  });

  it.skipIf(!existsSync(SCRIPT))('at a terminal: anything but "yes" changes nothing (exit 1); "yes" rolls back', async () => {
    const declined = await runAtTerminal('no\n');
    expect(declined.code).toBe(1);
    expect(declined.stdout).toContain('Type yes to continue:');
    expect(declined.stdout).toContain('Not confirmed: nothing changed.');
    expect(hasOperationsTable()).toEqual({ n: 1 });

    const confirmed = await runAtTerminal('yes\n');
    expect(confirmed.code).toBe(0);
    expect(hasOperationsTable()).toEqual({ n: 0 });
  });
});

describe('durable-ops migrate --remote without a region', () => {
  const home = mkdtempSync(join(tmpdir(), 'migrate-region-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('exit 1 with one line naming AWS_REGION, before any invoke (it never assumes a region)', { timeout: 60_000 }, async () => {
    // No region anywhere the AWS SDK looks: the environment, or a profile in an (empty) home's ~/.aws/config.
    const run = await runCli(['migrate', '--remote', 'durable-ops-prod-migrate'], 'sqlite::memory:', {
      AWS_REGION: '',
      AWS_DEFAULT_REGION: '',
      AWS_PROFILE: '',
      HOME: home,
      AWS_CONFIG_FILE: join(home, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
      LAMBDA_ENDPOINT: 'http://127.0.0.1:1',
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'Migration failed: migrate --remote needs the region of the deployed stack: set AWS_REGION (or a region in the AWS profile); it never assumes one',
    );
  });
});

describe('the DATABASE_URL forms the README lists', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'database-url-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('file:<path> is the same SQLite database as sqlite:<path>', async () => {
    const file = join(dir, 'same.sqlite');
    expect((await runCli(['migrate'], `file:${file}`)).code).toBe(0);
    expect(await runCli(['list', '--json'], `sqlite:${file}`)).toMatchObject({ code: 0, stdout: '{"items":[],"nextCursor":null}\n' });
  });

  it.skipIf(!hasMariadb())('mariadb://… is the same MariaDB database as mysql://…', async () => {
    const t = await createTestDatabase('mariadb');
    try {
      expect(t.url).toMatch(/^mysql:\/\//);
      expect(await runCli(['list', '--json'], t.url.replace(/^mysql:/, 'mariadb:'))).toMatchObject({ code: 0, stdout: '{"items":[],"nextCursor":null}\n' });
    } finally {
      await t.drop();
    }
  });
});
