import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { processWakeup } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

// Between `osls deploy` and `migrate` the new code runs on the old schema (infra/RUNBOOK.md §4): without its stored
// procedures, every step must still work, in-process (docs/design.md §9).
describe.skipIf(!hasMariadb())('a release whose stored procedures are not created yet, on mariadb', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
    for (const routine of ['admit_operation_v2', 'claim_operations_v2', 'complete_operations_v2', 'fail_attempt_v2']) await sql`DROP PROCEDURE ${sql.raw(routine)}`.execute(t.store.db);
  });
  afterAll(async () => t?.drop());

  it('admits, claims, runs and completes in-process, with the same outcome', async () => {
    const deps = testDeps();
    const alice = new OwnerScope(t.store, 'alice');
    const admitted = await admitOperation(alice, deps, 'k-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd' }, params: {} });
    expect((await admitOperation(alice, deps, 'k-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd' }, params: {} })).replayed).toBe(true);
    expect(await processWakeup({ ...deps, store: t.store }, () => 60_000)).toBe('succeeded');
    expect((await getOperation(alice, admitted.operation.id)).status).toBe('succeeded');
  });
});
