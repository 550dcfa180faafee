import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { CLAIM_FAILED_RESEND_SECONDS, processWakeup } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('a wake-up spent by a failed claim is replaced at once on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('a claim that throws sends a new wake-up before failing, and that wake-up starts the operation', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'latency');
    const { operation } = await admitOperation(owner, deps, 'latency-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'l1' } });
    expect(deps.wakeups.sent).toHaveLength(1);
    // The claim fails once (a fault before its transaction), as a claim group that rolled back would.
    let failures = 1;
    const registry = deps.registry;
    const types = registry.types.bind(registry);
    registry.types = () => {
      if (failures-- > 0) throw new Error('claim failed');
      return types();
    };
    const workerDeps = { ...deps, store: t.store };
    await expect(processWakeup(workerDeps, () => 600_000)).rejects.toThrow('claim failed');
    // The spent message was replaced: a new hint went out, due in 5 s — not after the visibility timeout or a sweep.
    expect(deps.wakeups.sent).toHaveLength(2);
    expect(deps.wakeups.sent[1]).toMatchObject({ delaySeconds: CLAIM_FAILED_RESEND_SECONDS, message: { v: 1, reason: 'retry' } });
    // A replacement that fails in turn sends none: a claim that keeps failing cannot make a chain of hints.
    failures = 1;
    await expect(processWakeup(workerDeps, () => 600_000, { v: 1, reason: 'retry' })).rejects.toThrow('claim failed');
    expect(deps.wakeups.sent).toHaveLength(2);
    // Delivering it runs the operation.
    expect(await processWakeup(workerDeps, () => 600_000)).toBe('succeeded');
    expect((await getOperation(owner, operation.id)).status).toBe('succeeded');
  });
});
