import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decideAdmissionToken } from '../../lib/capacity/admission-rate.js';
import type { CapacityFile } from '../../lib/capacity/capacity-policy.js';
import { CapacityExhaustedError, IdempotencyKeyReusedError, RateLimitedError } from '../../lib/errors.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { setOwnerPlan } from '../../lib/owners/owner-settings.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { expectCapacityMatchesActive, heldCapacity } from '../support/capacity-invariant.js';
import { testDeps } from '../support/fixtures.js';
import { RecordingLogger, RecordingMetrics } from '../support/recording-observability.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** An exclusive-subject task whose subject needs no table: admission reuses its active operation on a subject. */
const exclusiveTask = defineTask({
  type: 'test.exclusive',
  paramsSchema: z.strictObject({}),
  timeoutMs: 1_000,
  exclusiveSubject: { type: 'doc', lock: async () => {} },
  async run() {},
});

type Deps = ReturnType<typeof testDeps> & { logger: RecordingLogger; metrics: RecordingMetrics };

function depsWith(file: CapacityFile, capacity: { perOwner?: number } = {}): Deps {
  const base = testDeps({}, { ...capacity, file });
  base.registry.register(exclusiveTask);
  return { ...base, logger: new RecordingLogger(), metrics: new RecordingMetrics() };
}

const rated = (taskType: string, burst: number, perSeconds: number): CapacityFile => ({ taskTypes: { [taskType]: { rate: { burst, perSeconds } } } });

describe.each(DIALECTS)('admission rate limits (a token bucket per owner and task type) on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let seq = 0;

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['operation_notifications', 'operation_key_aliases', 'operations', 'capacity_slots', 'owner_capacity', 'owner_settings', 'admission_buckets'] as const) {
      await t.store.db.deleteFrom(table).execute();
    }
    t.clock.offsetMs = 0;
  });

  const owner = (id: string) => new OwnerScope(t.store, id);
  const admit = (deps: Deps, scope: OwnerScope, options: { key?: string; taskType?: string; subject?: string; params?: Record<string, unknown> } = {}) => {
    const key = options.key ?? `k-${++seq}`;
    return admitOperation(scope, deps, key, { taskType: options.taskType ?? 'test.noop', subject: { type: 'doc', id: options.subject ?? key }, params: options.params ?? {} });
  };
  const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);
  const countOperations = async () => Number((await t.store.db.selectFrom('operations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n);
  const buckets = () => t.store.db.selectFrom('admission_buckets').selectAll().orderBy('task_type').orderBy('owner_user_id').execute();
  const bucketOf = async (ownerUserId: string, taskType = 'test.noop') =>
    t.store.db.selectFrom('admission_buckets').selectAll().where('owner_user_id', '=', ownerUserId).where('task_type', '=', taskType).executeTakeFirst();

  it.skipIf(skip)('a burst over the rate is refused with an honest Retry-After; exactly Retry-After seconds later the next admission is admitted', async () => {
    // 2 at once, one new token every 30 s.
    const deps = depsWith(rated('test.noop', 2, 60));
    const alice = owner('alice');
    await admit(deps, alice);
    await admit(deps, alice);

    const refused = await refusal(admit(deps, alice));
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(30);
    expect((refused as RateLimitedError).code).toBe('rate_limited');

    t.clock.advance(29_000);
    const stillEarly = await refusal(admit(deps, alice));
    expect(stillEarly).toBeInstanceOf(RateLimitedError);
    expect((stillEarly as RateLimitedError).retryAfterSeconds).toBe(1);

    t.clock.advance((stillEarly as RateLimitedError).retryAfterSeconds * 1000);
    expect((await admit(deps, alice)).replayed).toBe(false);
    // That token was the only one: the next waits a whole refill period again.
    expect(((await refusal(admit(deps, alice))) as RateLimitedError).retryAfterSeconds).toBe(30);
    expect(await countOperations()).toBe(3);
    expect(deps.metrics.total(MetricName.RateLimited, 'test.noop')).toBe(3);
    expect(deps.logger.lines.filter((line) => line.fields.event === 'rate_limited').map((line) => line.fields)).toEqual(
      Array.from({ length: 3 }, () => ({ event: 'rate_limited', taskType: 'test.noop' })),
    );
  });

  it.skipIf(skip)('a 429 writes nothing: no operation row, no held slot, no wake-up, and the bucket row is unchanged', async () => {
    const deps = depsWith(rated('test.noop', 1, 3600));
    const alice = owner('alice');
    await admit(deps, alice);
    const before = { operations: await countOperations(), owner: await heldCapacity(t.store, 'owner:'), global: await heldCapacity(t.store, 'global:'), bucket: await bucketOf('alice') };
    const sent = deps.wakeups.sent.length;
    expect(before.bucket).toMatchObject({ milli_tokens: 0 });

    t.clock.advance(1_000);
    expect(await refusal(admit(deps, alice))).toBeInstanceOf(RateLimitedError);

    expect(await countOperations()).toBe(before.operations);
    expect(await heldCapacity(t.store, 'owner:')).toBe(before.owner);
    expect(await heldCapacity(t.store, 'global:')).toBe(before.global);
    expect(await bucketOf('alice')).toEqual(before.bucket);
    expect(deps.wakeups.sent.length).toBe(sent);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('a capacity 429 rolls the token back: the bucket row is exactly as before', async () => {
    const deps = depsWith(rated('test.noop', 5, 60), { perOwner: 1 });
    const alice = owner('alice');
    await admit(deps, alice);
    const bucket = await bucketOf('alice');
    expect(bucket).toMatchObject({ milli_tokens: 4000 });

    expect(await refusal(admit(deps, alice))).toBeInstanceOf(CapacityExhaustedError);
    expect(await bucketOf('alice')).toEqual(bucket);
    expect(await countOperations()).toBe(1);
    expect(deps.metrics.total(MetricName.RateLimited)).toBe(0);
  });

  it.skipIf(skip)('replays, reused active operations and refused keys spend no token, even with the bucket empty', async () => {
    const deps = depsWith({ taskTypes: { 'test.noop': { rate: { burst: 1, perSeconds: 3600 } }, 'test.exclusive': { rate: { burst: 1, perSeconds: 3600 } } } });
    const alice = owner('alice');
    const first = await admit(deps, alice, { key: 'same' });
    const bucket = await bucketOf('alice');
    expect(bucket).toMatchObject({ milli_tokens: 0 });

    for (let i = 0; i < 3; i++) {
      const replay = await admit(deps, alice, { key: 'same' });
      expect(replay).toMatchObject({ replayed: true, operation: { id: first.operation.id } });
    }
    // The same key for another request is a 422, never a 429.
    expect(await refusal(admit(deps, alice, { key: 'same', params: { n: 1 } }))).toBeInstanceOf(IdempotencyKeyReusedError);
    expect(await bucketOf('alice')).toEqual(bucket);
    expect(await refusal(admit(deps, alice))).toBeInstanceOf(RateLimitedError);

    // An exclusive subject's active operation is answered again without a token.
    const active = await admit(deps, alice, { taskType: 'test.exclusive', subject: 's-1' });
    const exclusiveBucket = await bucketOf('alice', 'test.exclusive');
    const reused = await admit(deps, alice, { taskType: 'test.exclusive', subject: 's-1' });
    expect(reused).toMatchObject({ reused: true, operation: { id: active.operation.id } });
    expect(await bucketOf('alice', 'test.exclusive')).toEqual(exclusiveBucket);
    expect(await countOperations()).toBe(2);
  });

  it.skipIf(skip)('buckets are per owner and per task type: an owner at their rate leaves other owners and task types unaffected', async () => {
    const deps = depsWith({ taskTypes: { 'test.noop': { rate: { burst: 1, perSeconds: 600 } }, 'demo.wait': { rate: { burst: 1, perSeconds: 600 } } } });
    const alice = owner('alice');
    await admit(deps, alice);
    expect(await refusal(admit(deps, alice))).toBeInstanceOf(RateLimitedError);

    await admit(deps, owner('bob'));
    await admit(deps, alice, { taskType: 'demo.wait', params: { durationMs: 0 } });
    expect(await refusal(admit(deps, owner('bob')))).toBeInstanceOf(RateLimitedError);
    expect((await buckets()).map((b) => [b.task_type, b.owner_user_id, b.milli_tokens])).toEqual([
      ['demo.wait', 'alice', 0],
      ['test.noop', 'alice', 0],
      ['test.noop', 'bob', 0],
    ]);
  });

  it.skipIf(skip)('without a rate (the default) admissions are not rate limited and no bucket row is written', async () => {
    const deps = depsWith({ taskTypes: { 'demo.wait': { rate: { burst: 1, perSeconds: 60 } } } });
    for (let i = 0; i < 5; i++) await admit(deps, owner('alice'));
    expect(await buckets()).toEqual([]);
  });

  it.skipIf(skip)("the plan picks the rate: a pro owner gets the task type's pro rate", async () => {
    const deps = depsWith({ taskTypes: { 'test.noop': { rate: { burst: 1, perSeconds: 60 }, plans: { pro: { rate: { burst: 3, perSeconds: 60 } } } } } });
    await setOwnerPlan(t.store, 'pat', 'pro');
    for (let i = 0; i < 3; i++) await admit(deps, owner('pat'));
    expect(((await refusal(admit(deps, owner('pat')))) as RateLimitedError).retryAfterSeconds).toBe(20);
    await admit(deps, owner('fred'));
    expect(((await refusal(admit(deps, owner('fred')))) as RateLimitedError).retryAfterSeconds).toBe(60);
  });

  it.skipIf(skip)('an owner retry spends a token; a refused one leaves the operation cancelled, spends nothing, and can be retried once refilled', async () => {
    const deps = depsWith(rated('test.noop', 2, 60));
    const alice = owner('alice');
    const { operation } = await admit(deps, alice);
    await admit(deps, alice);
    expect((await cancelOperation(alice, operation.id)).status).toBe('cancelled');
    const bucket = await bucketOf('alice');

    const refused = await refusal(retryOperation(alice, deps, operation.id));
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(30);
    expect((await getOperation(alice, operation.id)).status).toBe('cancelled');
    expect(await bucketOf('alice')).toEqual(bucket);
    expect(deps.logger.lines.filter((line) => line.fields.event === 'rate_limited').map((line) => line.fields)).toEqual([
      { event: 'rate_limited', operationId: operation.id, taskType: 'test.noop' },
    ]);
    await expectCapacityMatchesActive(t.store);

    t.clock.advance(30_000);
    expect((await retryOperation(alice, deps, operation.id)).status).toBe('queued');
    // The retry took the refilled token (what is left is the real milliseconds the test took, under one token).
    expect((await bucketOf('alice'))?.milli_tokens).toBeLessThan(1000);
    expect(await refusal(admit(deps, alice))).toBeInstanceOf(RateLimitedError);
    await expectCapacityMatchesActive(t.store);
  });

  it.skipIf(skip)('refill is exact over many partial waits: 1 token per 7 s, 10 admissions 7 s apart all pass after the burst', async () => {
    const deps = depsWith(rated('test.noop', 3, 21));
    const alice = owner('alice');
    for (let i = 0; i < 3; i++) await admit(deps, alice);
    for (let i = 0; i < 10; i++) {
      // Arrive at uneven moments inside each 7 s period; the fractions not yet worth a token carry over.
      t.clock.advance(2_500);
      expect(await refusal(admit(deps, alice))).toBeInstanceOf(RateLimitedError);
      t.clock.advance(4_500);
      await admit(deps, alice);
    }
    expect(await countOperations()).toBe(13);
  });
});

describe.skipIf(!hasMariadb())('admission rate limits under concurrency on MariaDB', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb', { poolSize: 24 });
  });
  afterAll(async () => t?.drop());

  const admitConcurrently = async (deps: Deps, ownerUserId: string, prefix: string, n: number) => {
    const scope = new OwnerScope(t.store, ownerUserId);
    const results = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => admitOperation(scope, deps, `${prefix}-${i}`, { taskType: 'test.noop', subject: { type: 'doc', id: `${prefix}-${i}` } })),
    );
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(refused.every((e) => e instanceof RateLimitedError), String(refused.find((e) => !(e instanceof RateLimitedError)))).toBe(true);
    return { accepted: n - refused.length, refused: refused as RateLimitedError[] };
  };

  it('16 concurrent admissions of a new owner with burst 5 admit exactly 5, and exactly 5 again once refilled', async () => {
    // 5 per day: refill during the test is far below one token.
    const deps = depsWith(rated('test.noop', 5, 86_400));
    const first = await admitConcurrently(deps, 'crowd', 'a', 16);
    expect(first.accepted).toBe(5);
    expect(first.refused).toHaveLength(11);
    expect(first.refused.every((e) => e.retryAfterSeconds >= 17_000)).toBe(true);
    const counted = await t.store.db.selectFrom('operations').select((eb) => eb.fn.countAll<number>().as('n')).where('owner_user_id', '=', 'crowd').executeTakeFirst();
    expect(Number(counted?.n)).toBe(5);
    const bucket = await t.store.db.selectFrom('admission_buckets').select('milli_tokens').where('owner_user_id', '=', 'crowd').executeTakeFirstOrThrow();
    expect(bucket.milli_tokens).toBeLessThan(1000);

    t.clock.advance(86_400_000);
    const second = await admitConcurrently(deps, 'crowd', 'b', 16);
    expect(second.accepted).toBe(5);
    await expectCapacityMatchesActive(t.store);
  });
});

describe('the token-bucket arithmetic (decideAdmissionToken)', () => {
  const rate = { burst: 2, perSeconds: 60 }; // one token per 30 s = 1 milli-token per 30,000 µs

  it('takes a token when one is there and moves refilled_at only by the time the credited milli-tokens cost', () => {
    expect(decideAdmissionToken({ milliTokens: 500, elapsedMicros: 15_029_999 }, rate)).toEqual({ taken: true, milliTokens: 0, advanceMicros: 15_000_000 });
  });

  it('a full bucket accrues nothing: refilled_at moves to now', () => {
    expect(decideAdmissionToken({ milliTokens: 1500, elapsedMicros: 40_000_000 }, rate)).toEqual({ taken: true, milliTokens: 1000, advanceMicros: 40_000_000 });
  });

  it('refuses with the wait until a whole token is there, rounded up to seconds, at least 1', () => {
    expect(decideAdmissionToken({ milliTokens: 0, elapsedMicros: 0 }, rate)).toEqual({ taken: false, retryAfterSeconds: 30 });
    expect(decideAdmissionToken({ milliTokens: 999, elapsedMicros: 0 }, rate)).toEqual({ taken: false, retryAfterSeconds: 1 });
    expect(decideAdmissionToken({ milliTokens: 0, elapsedMicros: 29_000_001 }, rate)).toEqual({ taken: false, retryAfterSeconds: 1 });
    expect(decideAdmissionToken({ milliTokens: 0, elapsedMicros: 30_000_000 }, rate)).toMatchObject({ taken: true });
  });

  it('a clock behind refilled_at credits nothing and waits the difference too', () => {
    expect(decideAdmissionToken({ milliTokens: 0, elapsedMicros: -5_000_000 }, rate)).toEqual({ taken: false, retryAfterSeconds: 35 });
    expect(decideAdmissionToken({ milliTokens: 1000, elapsedMicros: -5_000_000 }, rate)).toEqual({ taken: true, milliTokens: 0, advanceMicros: -5_000_000 });
  });

  it('a lowered burst caps the tokens kept; the largest rate and a year idle stay exact', () => {
    expect(decideAdmissionToken({ milliTokens: 50_000, elapsedMicros: 0 }, rate)).toEqual({ taken: true, milliTokens: 1000, advanceMicros: 0 });
    const big = { burst: 100_000, perSeconds: 86_400 };
    expect(decideAdmissionToken({ milliTokens: 0, elapsedMicros: 365 * 86_400_000_000 }, big)).toEqual({ taken: true, milliTokens: 99_999_000, advanceMicros: 365 * 86_400_000_000 });
  });
});
