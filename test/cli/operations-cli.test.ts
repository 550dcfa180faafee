import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { failOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { recordModelAttempt } from '../../lib/ai/record-model-attempt.js';
import { cliActor } from '../../lib/owners/actor.js';
import { testDeps } from '../support/fixtures.js';
import { runCli } from '../support/run-script.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

// Each CLI run is a process that loads TypeScript through tsx (a few seconds on a loaded 2-core machine).
describe.each(DIALECTS)('operator CLI list / show / cancel on %s', { timeout: 180_000 }, (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  const ids: Record<string, string> = {};
  const KEY = 'cli-secret-idempotency-key';

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    const deps = testDeps();
    const alice = new OwnerScope(t.store, 'alice');
    const bob = new OwnerScope(t.store, 'bob');
    ids.failed = (await admitOperation(alice, deps, KEY, { taskType: 'test.noop', subject: { type: 'doc', id: 'a1' } })).operation.id;
    const claim = await claimNextOperation(new WorkerScope(t.store), deps);
    if (!claim) throw new Error('nothing claimed');
    ids.leaseToken = claim.leaseToken;
    const scope = enterOwnerScope(new WorkerScope(t.store), claim);
    await recordModelAttempt(scope, claim, { attempt: 1, route: 'local', provider: 'http', model: 'local-model', outcome: 'server_error' });
    await failOperation(scope, claim, { kind: 'permanent', message: 'operator-visible failure text' }, 0, 0);
    ids.queued = (await admitOperation(bob, deps, 'k2', { taskType: 'test.noop', subject: { type: 'doc', id: 'b1' } })).operation.id;
    ids.other = (await admitOperation(bob, deps, 'k3', { taskType: 'demo.wait', subject: { type: 'doc', id: 'b2' }, params: { durationMs: 10 } })).operation.id;
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('list shows every owner, newest first, filtered by status, owner and task type, without keys or lease tokens', async () => {
    const all = await runCli(['list', '--json'], t.url);
    expect(all).toMatchObject({ code: 0, stderr: '' });
    const parsed = JSON.parse(all.stdout) as { items: { id: string; ownerUserId: string }[]; nextCursor: string | null };
    expect(parsed.items.map((i) => i.id)).toEqual([ids.other, ids.queued, ids.failed]);
    expect(all.stdout).not.toContain(KEY);
    expect(all.stdout).not.toContain(ids.leaseToken);
    // Failure text is in the details view (show, cancel), never in a list.
    expect(all.stdout).not.toContain('operator-visible failure text');

    const failed = JSON.parse((await runCli(['list', '--status', 'failed', '--json'], t.url)).stdout) as { items: { id: string }[] };
    expect(failed.items.map((i) => i.id)).toEqual([ids.failed]);
    const bobs = JSON.parse((await runCli(['list', '--owner', 'bob', '--task-type', 'test.noop', '--json'], t.url)).stdout) as { items: { id: string }[] };
    expect(bobs.items.map((i) => i.id)).toEqual([ids.queued]);

    const page = JSON.parse((await runCli(['list', '--limit', '2', '--json'], t.url)).stdout) as { items: unknown[]; nextCursor: string };
    expect(page.items).toHaveLength(2);
    const next = JSON.parse((await runCli(['list', '--limit', '2', '--cursor', page.nextCursor, '--json'], t.url)).stdout) as { items: { id: string }[] };
    expect(next.items.map((i) => i.id)).toEqual([ids.failed]);

    const text = await runCli(['list'], t.url);
    expect(text.stdout).toMatch(/^ID\s+OWNER\s+TASK TYPE\s+STATUS/);
    expect(text.stdout).toContain('bob');
  });

  it.skipIf(skip)('show prints the operator view: failure text and model provenance, never the key or the lease token', async () => {
    const shown = await runCli(['show', ids.failed as string, '--json'], t.url);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: ids.failed,
      ownerUserId: 'alice',
      status: 'failed',
      failure: { code: 'permanent_error' },
      failureMessage: 'operator-visible failure text',
      modelAttempts: [{ attempt: 1, route: 'local', provider: 'http', model: 'local-model', outcome: 'server_error' }],
    });
    expect(shown.stdout).not.toContain(KEY);
    expect(shown.stdout).not.toContain(ids.leaseToken);
    const text = await runCli(['show', ids.failed as string], t.url);
    expect(text.stdout).toContain('operator-visible failure text');
    expect(text.stdout).toContain('server_error');
  });

  it.skipIf(skip)("cancel cancels on the owner's behalf; a finished operation or an unknown id exits 1", async () => {
    const cancelled = await runCli(['cancel', ids.queued as string, '--json'], t.url);
    expect(cancelled.code).toBe(0);
    // cancel prints the same details view as show (README "Operator CLI"): failureMessage and modelAttempts included.
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ id: ids.queued, status: 'cancelled', ownerUserId: 'bob', failureMessage: null, modelAttempts: [] });
    const notifications = await t.store.db.selectFrom('operation_notifications').selectAll().where('operation_id', '=', ids.queued as string).execute();
    expect(notifications).toHaveLength(1);
    // Recorded as the CLI's cancel (cli:<user>@<host>), and `show` says so.
    expect(JSON.parse(cancelled.stdout).cancelRequestedBy).toBe(cliActor());
    const shown = (await runCli(['show', ids.queued as string], t.url)).stdout.split('\n').find((line) => line.startsWith('cancel requested by'));
    expect(shown?.trim().endsWith(cliActor())).toBe(true);
    expect((await runCli(['cancel', ids.failed as string], t.url)).code).toBe(1);
    const unknown = await runCli(['show', '00000000-0000-4000-8000-000000000000'], t.url);
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toContain('No operation');
  });
});

describe('operator CLI usage', () => {
  it.each([
    ['no command', [], 2],
    ['an unknown command', ['frobnicate'], 2],
    ['list with a bad status', ['list', '--status', 'done'], 2],
    ['list with a limit over 100', ['list', '--limit', '101'], 2],
    ['show without an id', ['show'], 2],
    ['cancel with a malformed id', ['cancel', 'not-an-id'], 2],
    ['migrate --down --remote', ['migrate', '--down', '--remote', 'fn'], 2],
  ] as const)('%s exits %i with the usage, before opening the database', { timeout: 60_000 }, async (_name, args, code) => {
    const run = await runCli(args, 'mysql://nobody@127.0.0.1:1/none');
    expect(run.code).toBe(code);
    expect(`${run.stdout}${run.stderr}`).toContain('usage: durable-ops');
  });

  it('--help lists every command', async () => {
    const run = await runCli(['--help'], 'sqlite::memory:');
    expect(run.code).toBe(0);
    for (const name of ['migrate', 'sweep', 'list', 'show', 'cancel', 'redrive-dlq', 'recovery', 'recovery-reconcile', 'owner', 'token']) {
      expect(run.stdout).toContain(`  ${name}`);
    }
  });
});
