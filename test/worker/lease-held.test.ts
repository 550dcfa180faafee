import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../lib/logger.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { startHeartbeats, type HeartbeatVerdict } from '../../lib/worker/heartbeat-loop.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe.each(DIALECTS)('the synchronous fence check on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('a process paused past its local lease deadline sees leaseHeld() false at once, before any timer of its runs', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'paused');
    await admitOperation(owner, deps, 'paused-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'p1' } });
    const worker = new WorkerScope(t.store);
    const claim = await claimNextOperation(worker, deps);
    if (!claim) throw new Error('expected a claim');
    const verdicts: HeartbeatVerdict[] = [];
    // As if the claim was sent so long ago that the local deadline less the 20 ms margin is 30 ms away.
    const loop = startHeartbeats(enterOwnerScope(worker, claim), claim, { intervalMs: 20, fenceMarginMs: 20, claimSentAt: performance.now() - claim.leaseMs + 50 }, silentLogger, (v) => verdicts.push(v));
    expect(loop.leaseHeld()).toBe(true);
    // The process is paused (a blocked event loop): no timer — neither the fence's nor a heartbeat's — can run.
    const pausedUntil = performance.now() + 60;
    while (performance.now() < pausedUntil) {
      // busy: the pause itself
    }
    expect(loop.leaseHeld()).toBe(false);
    expect(verdicts).toEqual(['fenced']);
    await loop.stop();
  });
});
