import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { databaseNow } from '../../lib/db/database-clock.js';
import { parseDbTime } from '../../lib/db/db-time.js';
import { CapacityExhaustedError, IdempotencyKeyReusedError, ValidationError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation } from '../../lib/operations/lease/claim-operation.js';
import { toOperationDto } from '../../lib/operations/owner/operation-dto.js';
import { cancelOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { testDeps } from '../support/fixtures.js';
import { implementationDatabase, IMPLEMENTATIONS, OPERATION_TABLES } from '../support/test-store.js';

// Delayed operations (docs/design.md §4, delayed operations): `delaySeconds` / `runAt` at admission make a `queued` row
// claimable only from then on, on the database clock (moved here with the test clock, never slept on).

const SECOND = 1_000;
/**
 * How far before the due time the tests look: the test clock adds to the real database clock, which runs on during a
 * test by far less than this.
 */
const JUST_BEFORE = 2 * SECOND;

/** A task type that accepts a delay of up to two hours and a per-operation priority. */
const laterTask = defineTask({
  type: 'test.later',
  paramsSchema: z.strictObject({}),
  timeoutMs: 60_000,
  delay: { maxSeconds: 7_200 },
  operationPriority: { min: -5, max: 5 },
  async run() {},
});

describe.each(IMPLEMENTATIONS)('delayed operations: $name', ({ dialect, routines }) => {
  const db = implementationDatabase({ dialect, routines }, { tables: [...OPERATION_TABLES, 'sweeper_runs'] });
  const { skip } = db;
  let deps: ReturnType<typeof testDeps>;
  let seq = 0;
  beforeEach(() => {
    deps = testDeps();
    deps.registry.register(laterTask);
  });

  const owner = (ownerUserId = 'ada') => new OwnerScope(db.store, ownerUserId);
  const admit = async (fields: Record<string, unknown>, key = `k-${++seq}`, ownerUserId = 'ada') =>
    (await admitOperation(owner(ownerUserId), deps, key, { taskType: laterTask.type, subject: { type: 'doc', id: 'd1' }, ...fields })).operation;
  const claimOne = () => claimNextOperation(new WorkerScope(db.store), deps);
  const sweep = () => runSweepOnce({ store: db.store, policy: deps.policy, wakeups: deps.wakeups, logger: deps.logger, metrics: deps.metrics, batchSize: 50, timeBudgetMs: 60_000 });
  const ms = (time: string | null) => parseDbTime(time ?? '').getTime();
  const hintsFor = (id: string) => deps.wakeups.sent.filter((sent) => sent.message.operationId === id);

  it.skipIf(skip)('a delayed operation is never claimed before it is due on the database clock, and is claimed once it is', async () => {
    const op = await admit({ delaySeconds: 120 });
    expect(op.status).toBe('queued');
    expect(ms(op.available_at) - ms(op.created_at)).toBe(120 * SECOND);
    expect(await claimOne()).toBeNull();
    db.t.clock.advance(120 * SECOND - JUST_BEFORE);
    expect(await claimOne()).toBeNull();
    db.t.clock.advance(JUST_BEFORE);
    expect((await claimOne())?.operationId).toBe(op.id);
  });

  it.skipIf(skip)('the queued deadline counts from when it becomes claimable; the hint is delayed by the delay, the re-send after it', async () => {
    const op = await admit({ delaySeconds: 600 });
    expect(ms(op.deadline_at) - ms(op.available_at)).toBe(deps.policy.deadlineMs);
    expect(ms(op.wake_at) - ms(op.available_at)).toBe(deps.policy.wakeupResendMs);
    expect(hintsFor(op.id)).toEqual([{ message: { v: 1, reason: 'admitted', operationId: op.id }, delaySeconds: 600 }]);
    // Past a deadline counted from the admission, but not from the due time: the sweeper leaves it queued.
    db.t.clock.advance(deps.policy.deadlineMs + SECOND);
    expect((await sweep()).deadlinesFailed).toBe(0);
    expect((await getOperation(owner(), op.id)).status).toBe('queued');
    db.t.clock.advance(600 * SECOND);
    expect((await sweep()).deadlinesFailed).toBe(1);
    expect(await getOperation(owner(), op.id)).toMatchObject({ status: 'failed', failure_code: 'deadline_exceeded' });
  });

  it.skipIf(skip)('beyond 900 s no message goes at admission; the first sweep once it is due sends it, and a worker claims it', async () => {
    const op = await admit({ delaySeconds: 3_600 });
    expect(hintsFor(op.id)).toEqual([]);
    expect(op.wake_at).toBe(op.available_at);
    db.t.clock.advance(3_600 * SECOND - JUST_BEFORE);
    expect((await sweep()).wakeupsSent).toBe(0);
    expect(await claimOne()).toBeNull();
    db.t.clock.advance(JUST_BEFORE);
    expect((await sweep()).wakeupsSent).toBe(1);
    expect(hintsFor(op.id)).toEqual([{ message: { v: 1, reason: 'sweeper', operationId: op.id }, delaySeconds: 0 }]);
    expect((await claimOne())?.operationId).toBe(op.id);
  });

  it.skipIf(skip)('runAt is measured on the database clock; a runAt already past starts at once, with a hint now', async () => {
    const now = parseDbTime(await databaseNow(db.store)).getTime();
    const later = await admit({ runAt: new Date(now + 45 * SECOND).toISOString() });
    expect(ms(later.available_at)).toBeGreaterThanOrEqual(now + 45 * SECOND);
    expect(ms(later.available_at)).toBeLessThan(now + 55 * SECOND);
    expect(hintsFor(later.id)[0]?.delaySeconds).toBeGreaterThanOrEqual(45);
    const past = await admit({ runAt: new Date(now - 3_600 * SECOND).toISOString() });
    expect(past.available_at).toBe(past.created_at);
    expect(hintsFor(past.id)).toEqual([{ message: { v: 1, reason: 'admitted', operationId: past.id }, delaySeconds: 0 }]);
    expect(toOperationDto(past).nextAttemptAt).toBeNull();
    expect((await claimOne())?.operationId).toBe(past.id);
    expect(await claimOne()).toBeNull();
    db.t.clock.advance(ms(later.available_at) - now);
    expect((await claimOne())?.operationId).toBe(later.id);
  });

  it.skipIf(skip)('runAt further ahead than the task type allows, measured from the database clock, is a 400 and writes nothing', async () => {
    const now = parseDbTime(await databaseNow(db.store)).getTime();
    const tooFar = admit({ runAt: new Date(now + 7_200 * SECOND + 10 * SECOND).toISOString() });
    await expect(tooFar).rejects.toBeInstanceOf(ValidationError);
    await expect(tooFar).rejects.toMatchObject({ issues: [{ path: 'body.runAt' }] });
    expect(await db.store.db.selectFrom('operations').select('id').execute()).toEqual([]);
  });

  it.skipIf(skip)('a delayed operation is listed queued with nextAttemptAt, holds its owner’s capacity, and an owner cancel ends it for good', async () => {
    deps = testDeps({}, { perOwner: 1 });
    deps.registry.register(laterTask);
    const op = await admit({ delaySeconds: 1_800 });
    expect(toOperationDto(op)).toMatchObject({ status: 'queued', nextAttemptAt: parseDbTime(op.available_at ?? '').toISOString() });
    await expect(admit({})).rejects.toBeInstanceOf(CapacityExhaustedError);
    expect((await cancelOperation(owner(), op.id)).status).toBe('cancelled');
    expect(toOperationDto(await getOperation(owner(), op.id)).nextAttemptAt).toBeNull();
    db.t.clock.advance(1_800 * SECOND + deps.policy.wakeupResendMs);
    expect((await sweep()).wakeupsSent).toBe(0);
    expect(await claimOne()).toBeNull();
    expect((await getOperation(owner(), op.id)).status).toBe('cancelled');
    // The slot it held is free again.
    expect((await admit({})).status).toBe('queued');
  });

  it.skipIf(skip)('the delay is part of the request: the same key and delay replay, another delay or a priority is a 422', async () => {
    const first = await admitOperation(owner(), deps, 'same', { taskType: laterTask.type, subject: { type: 'doc', id: 'd1' }, delaySeconds: 60 });
    const again = await admitOperation(owner(), deps, 'same', { taskType: laterTask.type, subject: { type: 'doc', id: 'd1' }, delaySeconds: 60 });
    expect(again).toMatchObject({ replayed: true, operation: { id: first.operation.id } });
    for (const changed of [{ delaySeconds: 61 }, {}, { delaySeconds: 60, priority: 0 }]) {
      await expect(admitOperation(owner(), deps, 'same', { taskType: laterTask.type, subject: { type: 'doc', id: 'd1' }, ...changed })).rejects.toBeInstanceOf(
        IdempotencyKeyReusedError,
      );
    }
    // One instant spelled two ways is one request.
    const now = parseDbTime(await databaseNow(db.store)).getTime();
    const soon = new Date(now + 600 * SECOND);
    const iso = soon.toISOString();
    const offset = new Date(soon.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    const utc = await admit({ runAt: iso }, 'at');
    expect((await admitOperation(owner(), deps, 'at', { taskType: laterTask.type, subject: { type: 'doc', id: 'd1' }, runAt: offset })).replayed).toBe(true);
    expect(await db.store.db.selectFrom('operations').select('id').where('idempotency_key', '=', 'at').execute()).toEqual([{ id: utc.id }]);
  });

  it.skipIf(skip)('a higher priority not yet due never holds back the owner’s due work, and goes first once due', async () => {
    const urgentLater = await admit({ priority: 5, delaySeconds: 60 });
    const plainNow = await admit({ priority: 0 });
    const lowNow = await admit({ priority: -5 });
    expect((await claimOne())?.operationId).toBe(plainNow.id);
    db.t.clock.advance(60 * SECOND);
    expect((await claimOne())?.operationId).toBe(urgentLater.id);
    expect((await claimOne())?.operationId).toBe(lowNow.id);
  });
});
