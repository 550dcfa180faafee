import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LeaseLostError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { completeOperation } from '../../lib/operations/lease/lease-operations.js';
import { heartbeat } from '../../lib/operations/lease/heartbeat.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

const TWO_MINUTES = 120_000;

describe.skipIf(!hasMariadb())('the database clock is the lease authority on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Skews this process's clock (Date) by `ms`, as a Lambda with a drifting clock would see it. */
  const skewProcessClock = (ms: number) => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + ms);
  };

  it('a worker whose clock runs two minutes fast keeps its live lease and completes', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'skew-fast');
    const worker = new WorkerScope(t.store);
    const { operation } = await admitOperation(owner, deps, 'fast', { taskType: 'test.noop', subject: { type: 'doc', id: '1' } });
    skewProcessClock(TWO_MINUTES);
    const claim = await claimNextOperation(worker, deps);
    expect(claim?.operationId).toBe(operation.id);
    if (!claim) return;
    const scope = enterOwnerScope(worker, claim);
    const ack = await heartbeat(scope, claim);
    expect(ack.cancelRequested).toBe(false);
    // the lease left is measured on the database clock alone: the process's skew does not shorten or stretch it
    expect(ack.leaseRemainingMs).toBeGreaterThan(25_000);
    expect(ack.leaseRemainingMs).toBeLessThanOrEqual(30_000);
    expect(await runSweepOnce({ ...deps, store: t.store, batchSize: 10, timeBudgetMs: 10_000 })).toMatchObject({ leasesRetried: 0 });
    await completeOperation(scope, claim);
    expect((await getOperation(owner, operation.id)).status).toBe('succeeded');
  });

  it('a worker whose clock runs two minutes slow cannot keep a lease the database clock has expired', async () => {
    const deps = testDeps();
    const owner = new OwnerScope(t.store, 'skew-slow');
    const worker = new WorkerScope(t.store);
    const { operation } = await admitOperation(owner, deps, 'slow', { taskType: 'test.noop', subject: { type: 'doc', id: '1' } });
    skewProcessClock(-TWO_MINUTES);
    const claim = await claimNextOperation(worker, deps);
    if (!claim) throw new Error('expected a claim');
    const scope = enterOwnerScope(worker, claim);
    t.clock.advance(deps.policy.leaseMs + 1);
    await expect(heartbeat(scope, claim)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(completeOperation(scope, claim)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await runSweepOnce({ ...deps, store: t.store, batchSize: 10, timeBudgetMs: 10_000 })).toMatchObject({ leasesRetried: 1 });
    expect((await getOperation(owner, operation.id)).status).toBe('waiting_for_retry');
  });
});
