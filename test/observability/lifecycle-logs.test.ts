import { z } from 'zod';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CapacityExhaustedError } from '../../lib/errors.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope } from '../../lib/operations/lease/claim-operation.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { getOperation } from '../../lib/operations/owner/owner-reads.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { SWEEP_LOG_LIMIT } from '../../lib/sweeper/sweep-report.js';
import { defineTask, PermanentTaskError } from '../../lib/tasks/task-definition.js';
import { runClaimedOperation } from '../../lib/worker/run-claimed-operation.js';
import { processWakeup, type WorkerDeps } from '../../lib/worker/worker-handler.js';
import { EXTERNAL_KEY, OUTPUT_MARKER, PROMPT_MARKER, startAiRig, type AiRig } from '../support/ai-rig.js';
import { testDeps } from '../support/fixtures.js';
import { RecordingLogger, RecordingMetrics } from '../support/recording-observability.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { waitFor } from '../support/wait-for.js';

/** Markers that may reach the database or a model, never a log line. */
const PARAMS_MARKER = 'PARAMS-MARKER-5e1b';
const FAILURE_MARKER = 'FAILURE-MARKER-c4d2';
const SUBJECT_MARKER = 'SUBJECT-MARKER-08aa';
const KEY_MARKER = 'IDEMPOTENCY-KEY-MARKER-3f9e';
/** A JWT-shaped string handed in as a param value. */
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW1hcmtlcg';
const TASK = 'test.observed';

/** Lets a `stall` run wait until the test has expired its lease. */
let stall: { started: boolean; release: () => void; released: Promise<void> } | undefined;

/** A task whose params pick its behaviour and carry values that must never be logged. */
const observedTask = defineTask({
  type: TASK,
  paramsSchema: z.strictObject({ mode: z.enum(['ok', 'flaky', 'fatal', 'stall']), note: z.string().max(200) }),
  timeoutMs: 30_000,
  async run({ params, attempt }) {
    if (params.mode === 'flaky' && attempt === 1) throw new Error(`${FAILURE_MARKER} flaky dependency (${params.note})`);
    if (params.mode === 'fatal') throw new PermanentTaskError(`${FAILURE_MARKER} bad input (${params.note})`);
    if (params.mode === 'stall' && stall) {
      stall.started = true;
      await stall.released;
    }
  },
});

describe.each(DIALECTS)('lifecycle log lines and metrics on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let logger: RecordingLogger;
  let metrics: RecordingMetrics;
  let deps: WorkerDeps & ReturnType<typeof testDeps>;
  let owner: OwnerScope;
  let seq = 0;
  /** Lease tokens seen during the test: none may appear in a line. */
  const leaseTokens: string[] = [];

  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (skip) return;
    await t.store.db.deleteFrom('operation_notifications').execute();
    await t.store.db.deleteFrom('operations').execute();
    t.clock.offsetMs = 0;
    logger = new RecordingLogger();
    metrics = new RecordingMetrics();
    const base = testDeps();
    base.registry.register(observedTask);
    deps = { ...base, store: t.store, logger, metrics };
    owner = new OwnerScope(t.store, `observed-owner-${++seq}`);
    leaseTokens.length = 0;
  });

  afterEach(() => {
    if (skip) return;
    const forbidden = [PARAMS_MARKER, FAILURE_MARKER, SUBJECT_MARKER, KEY_MARKER, JWT, t.url, EXTERNAL_KEY, PROMPT_MARKER, OUTPUT_MARKER, ...leaseTokens];
    for (const line of logger.lines) {
      for (const value of forbidden) expect(line.json, `a log line holds ${value}`).not.toContain(value);
      // lease tokens (256-bit hex) and request hashes (SHA-256 hex); JWTs of any content; any database URL
      expect(line.json).not.toMatch(/[0-9a-f]{64}/);
      expect(line.json).not.toMatch(/eyJ[\w-]+\.[\w-]+\./);
      expect(line.json).not.toMatch(/mysql:\/\/|sqlite:/);
      for (const key of ['leaseToken', 'lease_token', 'idempotencyKey', 'idempotency_key', 'requestHash', 'params', 'paramsJson', 'subject', 'subjectId', 'failureMessage', 'errorMessage']) {
        expect(line.fields, `a log line has the field ${key}`).not.toHaveProperty(key);
      }
    }
    for (const count of metrics.counts) {
      expect(Object.keys(count.dimensions).every((key) => key === 'taskType'), `${count.name} has a dimension other than taskType`).toBe(true);
    }
  });

  const admit = (mode: 'ok' | 'flaky' | 'fatal' | 'stall', key = `${KEY_MARKER}-${++seq}`) =>
    admitOperation(owner, deps, key, { taskType: TASK, subject: { type: 'doc', id: SUBJECT_MARKER }, params: { mode, note: `${PARAMS_MARKER} ${JWT}` } });
  const work = () => processWakeup(deps, () => 60_000);
  const sweep = () => runSweepOnce({ ...deps, batchSize: 50, timeBudgetMs: 30_000 });
  const lineOf = (operationId: string, event: string) => {
    const lines = logger.lines.filter((line) => line.fields.operationId === operationId && line.fields.event === event);
    expect(lines, `exactly one ${event} line for ${operationId}`).toHaveLength(1);
    return lines[0]!.fields;
  };

  it.skipIf(skip)('admit → claim → succeed: one line per event, each with the operation id; a replay is its own line', async () => {
    const key = `${KEY_MARKER}-happy`;
    const { operation } = await admit('ok', key);
    expect(await work()).toBe('succeeded');
    const replay = await admit('ok', key);
    expect(replay).toMatchObject({ replayed: true, operation: { id: operation.id } });

    expect(logger.eventsOf(operation.id)).toEqual(['operation_admitted', 'operation_claimed', 'operation_succeeded', 'operation_replayed']);
    expect(lineOf(operation.id, 'operation_admitted')).toEqual({ event: 'operation_admitted', operationId: operation.id, taskType: TASK, status: 'queued' });
    expect(lineOf(operation.id, 'operation_claimed')).toEqual({ event: 'operation_claimed', operationId: operation.id, taskType: TASK, attempt: 1, status: 'running' });
    expect(lineOf(operation.id, 'operation_succeeded')).toMatchObject({ taskType: TASK, attempt: 1, status: 'succeeded', durationMs: expect.any(Number) });
    expect(lineOf(operation.id, 'operation_replayed')).toMatchObject({ status: 'succeeded' });
    expect(logger.lines.every((line) => line.level === 'INFO')).toBe(true);
    expect(metrics.counts).toEqual([
      { name: MetricName.OperationAdmitted, value: 1, dimensions: { taskType: TASK } },
      { name: MetricName.OperationClaimed, value: 1, dimensions: { taskType: TASK } },
      { name: MetricName.OperationSucceeded, value: 1, dimensions: { taskType: TASK } },
      { name: MetricName.OperationReplayed, value: 1, dimensions: { taskType: TASK } },
    ]);
  });

  it.skipIf(skip)('a retryable failure logs the scheduled retry (delay, kind), never the failure text; the next attempt succeeds', async () => {
    const { operation } = await admit('flaky');
    expect(await work()).toBe('waiting_for_retry');
    const stored = await t.store.db.selectFrom('operations').select('failure_message').where('id', '=', operation.id).executeTakeFirstOrThrow();
    expect(stored.failure_message).toContain(FAILURE_MARKER); // the text is real, for operators — and stays out of the logs (afterEach)
    t.clock.advance(deps.policy.retry.maxDelayMs + 1);
    expect(await work()).toBe('succeeded');

    expect(logger.eventsOf(operation.id)).toEqual(['operation_admitted', 'operation_claimed', 'operation_retry_scheduled', 'operation_claimed', 'operation_succeeded']);
    expect(lineOf(operation.id, 'operation_retry_scheduled')).toMatchObject({
      attempt: 1,
      status: 'waiting_for_retry',
      failureKind: 'retryable',
      retryInMs: expect.any(Number),
      durationMs: expect.any(Number),
    });
    expect(metrics.total(MetricName.OperationRetryScheduled, TASK)).toBe(1);
    expect(metrics.total(MetricName.OperationClaimed, TASK)).toBe(2);
  });

  it.skipIf(skip)('a permanent failure logs its bounded code; the owner retry is logged too', async () => {
    const { operation } = await admit('fatal');
    expect(await work()).toBe('failed');
    expect(lineOf(operation.id, 'operation_failed')).toMatchObject({ taskType: TASK, attempt: 1, status: 'failed', failureCode: 'permanent_error' });
    const stored = await t.store.db.selectFrom('operations').select('failure_message').where('id', '=', operation.id).executeTakeFirstOrThrow();
    expect(stored.failure_message).toContain(FAILURE_MARKER); // the text was real — and stayed out of the logs (afterEach)

    await retryOperation(owner, deps, operation.id);
    expect(lineOf(operation.id, 'owner_retried')).toEqual({ event: 'owner_retried', operationId: operation.id, taskType: TASK, status: 'queued' });
    expect(logger.eventsOf(operation.id)).toEqual(['operation_admitted', 'operation_claimed', 'operation_failed', 'owner_retried']);
    expect(metrics.total(MetricName.OperationFailed, TASK)).toBe(1);
  });

  it.skipIf(skip)('owner cancels: a queued operation is cancelled at once; a running one is requested, then acknowledged by the worker', async () => {
    const queued = (await admit('ok')).operation;
    await cancelOperation(owner, queued.id, deps);
    expect(lineOf(queued.id, 'operation_cancelled')).toEqual({ event: 'operation_cancelled', by: 'owner', operationId: queued.id, taskType: TASK, status: 'cancelled' });

    const running = (await admit('ok')).operation;
    const worker = new WorkerScope(t.store);
    const claim = await claimNextOperation(worker, deps);
    if (!claim) throw new Error('expected a claim');
    leaseTokens.push(claim.leaseToken);
    await cancelOperation(owner, running.id, deps);
    await cancelOperation(owner, running.id, deps); // a second request changes nothing and logs nothing
    expect(await runClaimedOperation(enterOwnerScope(worker, claim), claim, deps, () => 60_000)).toBe('cancelled');
    expect(logger.eventsOf(running.id)).toEqual(['operation_admitted', 'cancel_requested', 'operation_cancelled']);
    expect(lineOf(running.id, 'operation_cancelled')).toMatchObject({ by: 'worker', attempt: 1, status: 'cancelled' });
    expect(metrics.total(MetricName.OperationCancelled, TASK)).toBe(2);
  });

  it.skipIf(skip)('the sweeper expires a stalled lease: it logs the expiry and its counts, the worker logs the lease lost', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    stall = { started: false, release, released };
    try {
      const { operation } = await admit('stall');
      const running = work();
      await waitFor(() => stall?.started, { what: 'the stalled run to start' });
      const row = await t.store.db.selectFrom('operations').select('lease_token').where('id', '=', operation.id).executeTakeFirstOrThrow();
      if (row.lease_token) leaseTokens.push(row.lease_token);
      t.clock.advance(deps.policy.leaseMs + 1);
      expect(await sweep()).toMatchObject({ leasesRetried: 1 });
      release();
      expect(await running).toBe('lease_lost');

      expect(logger.eventsOf(operation.id)).toEqual(['operation_admitted', 'operation_claimed', 'lease_expired', 'lease_lost']);
      expect(lineOf(operation.id, 'lease_expired')).toEqual({ event: 'lease_expired', operationId: operation.id, status: 'waiting_for_retry' });
      const lost = logger.lines.find((line) => line.fields.event === 'lease_lost');
      expect(lost).toMatchObject({ level: 'WARN', fields: { operationId: operation.id, taskType: TASK, attempt: 1 } });
      const summary = logger.lines.filter((line) => line.fields.event === 'sweep_finished');
      expect(summary).toHaveLength(1);
      expect(summary[0]!.fields).toMatchObject({ leasesRetried: 1, wakeupsSent: 1, transitionsNotLogged: 0, durationMs: expect.any(Number) });
      expect(metrics.total(MetricName.LeaseLost, TASK)).toBe(1);
      expect(metrics.total(MetricName.SweepLeasesExpired)).toBe(1);
      expect(metrics.total(MetricName.SweepWakeupsSent)).toBe(1);
      expect(metrics.counts.filter((c) => c.name.startsWith('Sweep')).every((c) => Object.keys(c.dimensions).length === 0)).toBe(true);
    } finally {
      stall?.release();
      stall = undefined;
    }
  });

  it.skipIf(skip)('a sweep logs at most SWEEP_LOG_LIMIT transitions one by one; the rest are counted in its summary', async () => {
    const total = SWEEP_LOG_LIMIT + 2;
    for (let i = 0; i < total; i++) await admit('ok');
    t.clock.advance(deps.policy.deadlineMs + 1);
    expect(await sweep()).toMatchObject({ deadlinesFailed: total });

    const failed = logger.lines.filter((line) => line.fields.event === 'deadline_exceeded');
    expect(failed).toHaveLength(SWEEP_LOG_LIMIT);
    expect(new Set(failed.map((line) => line.fields.operationId)).size).toBe(SWEEP_LOG_LIMIT);
    expect(failed[0]!.fields).toEqual({ event: 'deadline_exceeded', operationId: expect.any(String), status: 'failed', failureCode: 'deadline_exceeded' });
    expect(logger.lines.at(-1)!.fields).toMatchObject({ event: 'sweep_finished', deadlinesFailed: total, transitionsNotLogged: 2 });
    expect(metrics.total(MetricName.SweepDeadlinesFailed)).toBe(total);
  });

  it.skipIf(skip)('an idle wake-up and every sweep pass leave one DEBUG line of identifiers and counts', async () => {
    expect(await processWakeup(deps, () => 60_000, { v: 1, reason: 'sweeper', operationId: 'op-hinted' })).toBe('idle');
    expect(logger.lines.filter((line) => line.level === 'DEBUG')).toEqual([
      expect.objectContaining({ message: expect.stringContaining('nothing claimable'), fields: { reason: 'sweeper', hintOperationId: 'op-hinted' } }),
    ]);

    await admit('ok');
    t.clock.advance(deps.policy.deadlineMs + 1);
    await sweep();
    const passes = logger.lines.filter((line) => line.message === 'sweep pass finished');
    expect(passes.map((line) => line.fields.pass)).toEqual(['expire_leases', 'fail_past_deadline', 'resend_wakeups', 'purge', 'reclaim_capacity']);
    for (const line of passes) expect(line).toMatchObject({ level: 'DEBUG', fields: { batches: 1, rows: expect.any(Number), durationMs: expect.any(Number) } });
    expect(passes[1]!.fields.rows).toBe(1);
  });

  it.skipIf(skip)('a full pool logs capacity_rejected with the pool kind and no operation id; nothing else is logged for it', async () => {
    deps = { ...deps, ...testDeps({}, { perOwner: 1 }), registry: deps.registry, logger, metrics, store: t.store };
    const { operation } = await admit('ok');
    await expect(admit('ok')).rejects.toBeInstanceOf(CapacityExhaustedError);
    const rejected = logger.lines.filter((line) => line.fields.event === 'capacity_rejected');
    expect(rejected.map((line) => line.fields)).toEqual([{ event: 'capacity_rejected', taskType: TASK, pool: 'owner' }]);
    expect(logger.lines.map((line) => line.fields.event)).toEqual(['operation_admitted', 'capacity_rejected']);
    expect(logger.eventsOf(operation.id)).toEqual(['operation_admitted']);
    expect(metrics.total(MetricName.CapacityRejected, TASK)).toBe(1);
  });

  it.skipIf(skip)('an owner retry into a full pool logs capacity_rejected with the operation id and the pool kind', async () => {
    deps = { ...deps, ...testDeps({}, { perOwner: 1 }), registry: deps.registry, logger, metrics, store: t.store };
    const { operation: failed } = await admit('fatal');
    expect(await work()).toBe('failed');
    await admit('ok'); // takes the owner's only slot
    await expect(retryOperation(owner, deps, failed.id)).rejects.toBeInstanceOf(CapacityExhaustedError);
    expect(logger.eventsOf(failed.id)).toEqual(['operation_admitted', 'operation_claimed', 'operation_failed', 'capacity_rejected']);
    expect(lineOf(failed.id, 'capacity_rejected')).toEqual({ event: 'capacity_rejected', operationId: failed.id, taskType: TASK, pool: 'owner' });
    expect(metrics.total(MetricName.CapacityRejected, TASK)).toBe(1);
  });

  describe('model routes', () => {
    let rig: AiRig;
    beforeEach(async () => {
      if (skip) return;
      rig = await startAiRig(t.store, { requestTimeoutMs: 500 });
      deps = { ...rig.deps, logger, metrics };
    });
    afterEach(async () => rig?.close());

    it.skipIf(skip)('a failed local route logs the external fallback; the next claim names the external route', async () => {
      await updateOwnSettings(owner, { privacyMode: 'external_allowed' });
      rig.local.fail(503);
      const { operation } = await admitOperation(owner, deps, `${KEY_MARKER}-ai`, { taskType: 'test.ai-fallback', subject: { type: 'doc', id: SUBJECT_MARKER } });
      expect(await work()).toBe('waiting_for_external_fallback');
      expect(await work()).toBe('succeeded');
      expect(logger.eventsOf(operation.id)).toEqual([
        'operation_admitted',
        'operation_claimed',
        'operation_external_fallback',
        'operation_claimed',
        'operation_succeeded',
      ]);
      const claims = logger.lines.filter((line) => line.fields.event === 'operation_claimed').map((line) => line.fields.route);
      expect(claims).toEqual(['local', 'external']);
      expect(lineOf(operation.id, 'operation_external_fallback')).toMatchObject({ status: 'waiting_for_external_fallback', route: 'local', failureKind: 'retryable' });
      expect(metrics.total(MetricName.ExternalFallback, 'test.ai-fallback')).toBe(1);
      expect((await getOperation(owner, operation.id)).status).toBe('succeeded');
    });
  });
});
