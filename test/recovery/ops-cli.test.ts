import { runCli } from '../support/run-script.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';
import { buildLedgerFixture, type LedgerFixture } from './ops-fixtures.js';

/** Runs `durable-ops recovery …` against `databaseUrl`. */
const recoveryCli = (databaseUrl: string, args: readonly string[]) => runCli(['recovery', ...args], databaseUrl);

describe.each(DIALECTS)('operator CLI `durable-ops recovery` on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let ops: LedgerFixture;
  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    ops = await buildLedgerFixture(t);
    // The CLI runs without the test clock's offset: wait until the stale lease has expired on the real database clock.
    await waitFor(
      () =>
        t.store.db
          .selectFrom('recovery_operations')
          .select('id')
          .where('id', '=', ops.staleRunning)
          .where('lease_expires_at', '<=', t.store.caps.timeAt(0))
          .executeTakeFirst(),
      { what: 'the stale lease to expire on the real database clock' },
    );
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('verify exits 0 on an intact ledger', { timeout: 60_000 }, async () => {
    const run = await recoveryCli(t.url, ['verify']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('Checked 8 recovery operations: every chain is intact.');
    expect(run.stdout).not.toContain('BROKEN');
  });

  it.skipIf(skip)('list prints the unresolved set: a table by default, the API’s items with --json', { timeout: 60_000 }, async () => {
    const json = await recoveryCli(t.url, ['list', '--json']);
    expect(json.code).toBe(0);
    const ids = JSON.parse(json.stdout).items.map((item: { id: string }) => item.id);
    expect(ids.sort()).toEqual([ops.staleRunning, ops.recoveryRequired, ops.recovering, ops.outcomeUnknown].sort());

    const table = await recoveryCli(t.url, ['list', '--state', 'running']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+MODULE\s+KIND\s+STATE\s+STALE/);
    expect(table.stdout).toContain(ops.staleRunning);
    expect(table.stdout).not.toContain(ops.liveRunning);
    expect(table.stdout).toContain('test.unregistered: No reconciliation action is registered');
  });

  it.skipIf(skip)('show prints the operation with its checkpoint kinds, states and fences', { timeout: 60_000 }, async () => {
    const run = await recoveryCli(t.url, ['show', ops.outcomeUnknown, '--json']);
    expect(run.code).toBe(0);
    const details = JSON.parse(run.stdout);
    expect(details).toMatchObject({ id: ops.outcomeUnknown, state: 'outcome_unknown', fence: 2, chain: { ok: true } });
    expect(details).not.toHaveProperty('idempotencyKey');
    // The one command that prints a request hash (README "Operator CLI"): SHA-256 hex, no request content.
    expect(details.requestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(details.checkpoints.map((c: any) => [c.seq, c.kind, c.state, c.fence, c.previousFence])).toEqual([
      [0, 'begin', 'running', 1, null],
      [1, 'takeover', 'outcome_unknown', 2, 1],
    ]);
    const missing = await recoveryCli(t.url, ['show', '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(1);
  });

  it.skipIf(skip)('after a checkpoint’s evidence is tampered with, verify exits 1 and names that operation only', { timeout: 60_000 }, async () => {
    await t.store.db
      .updateTable('recovery_checkpoints')
      .set({ evidence: '{"messageRef":"forged"}' })
      .where('operation_id', '=', ops.staleRunning)
      .where('seq', '=', 1)
      .execute();
    const run = await recoveryCli(t.url, ['verify']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`BROKEN ${ops.staleRunning} at checkpoint 1: hash does not match content`);
    expect(run.stdout.match(/BROKEN/g)).toHaveLength(1);

    const json = await recoveryCli(t.url, ['verify', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ checked: 8, broken: [{ operationId: ops.staleRunning, seq: 1, reason: 'hash does not match content' }] });
  });
});

describe('recovery CLI usage errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-recovery-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each<[string, string[]]>([
    ['no command', []],
    ['an unknown command', ['repair']],
    ['show without an id', ['show']],
    ['show with a malformed id', ['show', 'not-an-id']],
    ['verify with an argument', ['verify', 'extra']],
    ['a terminal state', ['list', '--state', 'succeeded']],
    ['limit 0', ['list', '--limit', '0']],
    ['--state on verify', ['verify', '--state', 'running']],
    ['an unknown option', ['list', '--force']],
  ])('%s exits 2 with the usage text, before opening the database', { timeout: 60_000 }, async (_name, args) => {
    const database = join(dir, 'never-opened.sqlite');
    const run = await recoveryCli(`sqlite:${database}`, args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('usage: durable-ops recovery list');
    expect(existsSync(database)).toBe(false);
  });
});
