import { sql } from 'kysely';
import type { Connection } from 'mysql2/promise';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openStore, type Store } from '../../lib/db/store.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { connectAdmin } from '../support/mariadb-server.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

/**
 * RDS Proxy keeps multiplexing a session only while it holds no state the proxy cannot move (AWS, "Avoiding pinning an
 * RDS Proxy", MySQL/MariaDB: server-side prepared statements, user variables, most `SET`s, temporary tables, `LOCK
 * TABLES`, `GET_LOCK()`, executable comments `/*! … *\/` and `/*M! … *\/`, statement text over 16 KB; calling a stored
 * procedure does not pin). The server's general log records exactly the text each client statement arrived with, so
 * this test turns it on for one connection's hot paths — admission, replay, claim, run, completion, a failed attempt and
 * its retry, a status read, a sweep — and checks every statement, and how many round trips each step took.
 */

/** A task whose run always fails (a retryable error): the failure path. */
const failingTask = defineTask({
  type: 'test.always-fails',
  paramsSchema: z.object({}).strict(),
  timeoutMs: 60_000,
  async run() {
    throw new Error('provider unavailable');
  },
});

/** Constructs the proxy cannot follow, by what the AWS page lists. */
const PINNING = [/@/, /\/\*[!M]/, /\bGET_LOCK\b/i, /\bLOCK\s+TABLES?\b/i, /\bTEMPORARY\b/i, /^\s*SET\b/i, /^\s*PREPARE\b/i];

describe.skipIf(!hasMariadb())('hot paths keep RDS Proxy multiplexing, on mariadb', () => {
  let t: TestDatabase;
  let store: Store;
  let admin: Connection;
  let threadId: number;

  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    // One connection, so one server thread carries every statement of the test.
    store = openStore(t.url, { poolSize: 1 });
    threadId = Number((await sql<{ id: number }>`SELECT CONNECTION_ID() AS id`.execute(store.db)).rows[0]?.id);
    admin = await connectAdmin(inject('mariadbAdminUrl'));
  });
  afterAll(async () => {
    await admin?.query('SET GLOBAL general_log = 0');
    await admin?.end();
    await store?.destroy();
    await t?.drop();
  });

  const marker = (name: string) => sql`SELECT ${`step:${name}`} AS step`.execute(store.db);
  const prepares = async () => Number((await sql<{ Value: string }>`SHOW SESSION STATUS LIKE 'Com_stmt_prepare'`.execute(store.db)).rows[0]?.Value);

  it('no hot statement pins the session, none is prepared; an admission is one round trip, a claim-run-complete two', async () => {
    const deps = testDeps();
    deps.registry.register(failingTask);
    const workerDeps = { ...deps, store };
    const alice = new OwnerScope(store, 'alice');
    const preparedBefore = await prepares();
    const [[{ log_output: logOutput }]] = (await admin.query('SELECT @@GLOBAL.log_output AS log_output')) as unknown as [[{ log_output: string }]];
    await admin.query("SET GLOBAL log_output = 'TABLE'");
    await admin.query('SET GLOBAL general_log = 1');
    let log: { argument: string; command_type: string }[];
    try {
      await marker('admission');
      const admitted = await admitOperation(alice, deps, 'k-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} });
      await marker('replay');
      await admitOperation(alice, deps, 'k-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' }, params: {} });
      await marker('wake-up: claim, run, completion');
      expect(await processWakeup(workerDeps, () => 60_000)).toBe('succeeded');
      await marker('status read');
      expect((await getOperation(alice, admitted.operation.id)).status).toBe('succeeded');
      await marker('failing admission');
      await admitOperation(alice, deps, 'k-2', { taskType: 'test.always-fails', subject: { type: 'doc', id: 'd2' }, params: {} });
      await marker('wake-up: claim, run, failed attempt');
      expect(await processWakeup(workerDeps, () => 60_000)).not.toBe('idle');
      await marker('sweep');
      await runSweepOnce({ store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 30_000 });
      await marker('end');
    } finally {
      await admin.query('SET GLOBAL general_log = 0');
      await admin.query(`SET GLOBAL log_output = ${admin.escape(logOutput)}`);
      const [rows] = await admin.query(
        `SELECT CONVERT(argument USING utf8mb4) AS argument, command_type FROM mysql.general_log WHERE thread_id = ${threadId} ORDER BY event_time`,
      );
      log = rows as typeof log;
      await admin.query('TRUNCATE TABLE mysql.general_log');
    }
    expect(await prepares()).toBe(preparedBefore);

    const statements = log.filter((entry) => entry.command_type !== 'Quit');
    expect(statements.filter((entry) => entry.command_type !== 'Query')).toEqual([]);
    const hot = statements.filter((entry) => !entry.argument.startsWith("SELECT 'step:") && !entry.argument.startsWith('SHOW SESSION STATUS'));
    expect(hot.length).toBeGreaterThan(10);
    for (const { argument } of hot) {
      for (const pattern of PINNING) expect(argument, `${pattern} in: ${argument.slice(0, 200)}`).not.toMatch(pattern);
      expect(Buffer.byteLength(argument)).toBeLessThan(16 * 1024);
    }

    // Round trips per step: the statements between one marker and the next.
    const steps = new Map<string, string[]>();
    let current = '';
    for (const { argument } of statements) {
      const step = /^SELECT 'step:(.*)' AS step$/.exec(argument)?.[1];
      if (step !== undefined) current = step;
      else if (current) steps.set(current, [...(steps.get(current) ?? []), argument]);
    }
    expect(steps.get('admission')).toEqual([expect.stringMatching(/^CALL admit_operation_v2\(/)]);
    expect(steps.get('replay')).toEqual([expect.stringMatching(/^CALL admit_operation_v2\(/)]);
    expect(steps.get('failing admission')).toEqual([expect.stringMatching(/^CALL admit_operation_v2\(/)]);
    // A failed attempt is one round trip; the worker then asks whether the owner has more due work (one probe a lane).
    expect((steps.get('wake-up: claim, run, failed attempt') ?? []).filter((statement) => !statement.startsWith('SELECT * FROM operations'))).toEqual([
      expect.stringMatching(/^CALL claim_operations_v2\(/),
      expect.stringMatching(/^CALL fail_attempt_v2\(/),
    ]);
    // The claim answers what the pre-run rechecks need, and the completion whether the owner has more due work.
    expect(steps.get('wake-up: claim, run, completion')).toEqual([
      expect.stringMatching(/^CALL claim_operations_v2\(/),
      expect.stringMatching(/^CALL complete_operations_v2\(/),
    ]);
  });
});
