import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidTransitionError, LeaseLostError, ValidationError } from '../../lib/errors.js';
import {
  ALL_STATUSES,
  isTerminal,
  nextStatus,
  TRANSITIONS,
  type OperationEvent,
  type OperationStatus,
} from '../../lib/operations/lifecycle/operation-status.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { assertsCoverage, FUZZ_TEST_TIMEOUT_MS, fuzzParameters } from './fuzz-settings.js';
import { EVENTS_OF_STEP, FUZZ_OWNER, FUZZ_TASK_TYPE, stepArbitrary, TransitionRig, type Step, type StepOutcome, type WorldState } from './transition-steps.js';

/**
 * The transition table of docs/design.md §2, written out again from the design text (not from `TRANSITIONS`), as the oracle
 * the pure property holds `nextStatus` to: from → event → to. Anything absent is refused.
 */
const DESIGN_TABLE: Readonly<Record<OperationStatus, Partial<Record<OperationEvent, OperationStatus>>>> = {
  queued: { claim: 'running', owner_cancel: 'cancelled', deadline_passed: 'failed' },
  waiting_for_retry: { claim: 'running', owner_cancel: 'cancelled', deadline_passed: 'failed' },
  waiting_for_external_fallback: { claim: 'running', owner_cancel: 'cancelled', deadline_passed: 'failed' },
  running: {
    complete: 'succeeded',
    retryable_failure: 'waiting_for_retry',
    external_fallback: 'waiting_for_external_fallback',
    permanent_failure: 'failed',
    request_cancel: 'running',
    acknowledge_cancel: 'cancelled',
    lease_expired_retry: 'waiting_for_retry',
    lease_expired_final: 'failed',
    lease_expired_cancelled: 'cancelled',
  },
  succeeded: {},
  failed: { owner_retry: 'queued' },
  cancelled: { owner_retry: 'queued' },
};

const EVENTS = Object.keys(TRANSITIONS) as OperationEvent[];
const statusArb = fc.constantFrom(...ALL_STATUSES);
const eventArb = fc.constantFrom(...EVENTS);

/** True when `to` follows from `from` by one or two events of `events` (a sweep may chain two). */
function reachableVia(from: OperationStatus, to: OperationStatus, events: readonly OperationEvent[]): boolean {
  const step = (status: OperationStatus) => events.filter((e) => TRANSITIONS[e].from.includes(status)).map((e) => TRANSITIONS[e].to);
  return step(from).some((mid) => mid === to || step(mid).includes(to));
}

/** A status move seen in the database, for the coverage check; a move to `failed` names its failure code. */
type Move = `${OperationStatus}->${OperationStatus}` | `${OperationStatus}->failed:${string}`;

/** Moves every full run must have seen at least once, or the generator has stopped exercising the table. */
const EXPECTED_MOVES: readonly Move[] = [
  'queued->running',
  'queued->cancelled',
  'queued->failed:deadline_exceeded',
  'running->succeeded',
  'running->waiting_for_retry',
  'running->waiting_for_external_fallback',
  'running->failed:permanent_error',
  'running->failed:retries_exhausted',
  'running->failed:timeout',
  'running->failed:lease_expired',
  'running->cancelled',
  'waiting_for_retry->running',
  'failed->queued',
  'cancelled->queued',
];

/**
 * Everything one step may and must do to the state, given what it addressed and whether it was refused. Also
 * returns the moves it saw and counts terminal transitions per operation into `terminalCount`.
 */
function checkStep(step: Step, outcome: StepOutcome, before: WorldState, after: WorldState, terminalCount: Map<string, number>): Move[] {
  const label = JSON.stringify({ step, outcome: { target: outcome.target, rejected: outcome.rejected?.name } });
  if (outcome.rejected !== null || step.kind === 'replay' || step.kind === 'advanceClock' || (step.kind === 'claim' && outcome.target === null)) {
    // A refused event, a replayed admission, time passing, or a claim that found nothing: not one row changed.
    expect(after, label).toEqual(before);
  }
  if ('forged' in step && step.forged && outcome.target !== null) {
    const refusal = step.kind === 'heartbeat' && (step.percent < 0 || step.percent > 100) ? ValidationError : LeaseLostError;
    expect(outcome.rejected, label).toBeInstanceOf(refusal);
  }
  const beforeById = new Map(before.operations.map((row) => [row.id, row]));
  const added = after.operations.filter((row) => !beforeById.has(row.id));
  expect(added.map((row) => [row.id, row.status]), label).toEqual(step.kind === 'admit' ? [[outcome.target, 'queued']] : []);
  expect(after.operations.length - added.length, `${label}: no operation vanished`).toBe(before.operations.length);
  const moves: Move[] = [];
  for (const row of after.operations) {
    const old = beforeById.get(row.id);
    if (!old) continue;
    expect(ALL_STATUSES, label).toContain(row.status);
    if (JSON.stringify(old) === JSON.stringify(row)) continue;
    if (step.kind !== 'sweep') expect(row.id, `${label}: only the addressed operation changes`).toBe(outcome.target);
    const retried = step.kind === 'ownerRetry' && row.id === outcome.target;
    if (isTerminal(old.status)) {
      // Terminal rows never change, except failed/cancelled → queued by an owner retry.
      expect({ retried, from: old.status, to: row.status }, label).toMatchObject({ retried: true, to: 'queued' });
      expect(['failed', 'cancelled'], label).toContain(old.status);
    }
    if (old.status === row.status) continue;
    expect(reachableVia(old.status, row.status, EVENTS_OF_STEP[step.kind]), `${label}: ${old.status} → ${row.status}`).toBe(true);
    moves.push(row.status === 'failed' ? `${old.status}->failed:${row.failure_code}` : `${old.status}->${row.status}`);
    if (isTerminal(row.status)) terminalCount.set(row.id, (terminalCount.get(row.id) ?? 0) + 1);
  }
  return moves;
}

/**
 * docs/design.md §2: a claim never takes an operation past its deadline (queued deadlines fail closed), nor one waiting for a
 * retry before its `next_attempt_at`. The claim ran between `from` and `to` on the database clock.
 */
function checkClaimTiming(before: WorldState, claimedId: string, from: string, to: string): void {
  const row = before.operations.find((candidate) => candidate.id === claimedId);
  const label = `claim of ${claimedId} between ${from} and ${to}`;
  expect(row?.deadline_at ?? '', `${label}: deadline passed`).not.toSatisfy((deadline: string) => deadline <= from);
  expect(row?.available_at ?? '', `${label}: not yet available`).not.toSatisfy((available: string) => available > to);
}

/** What holds in every state, whatever led to it (docs/design.md §2: lease, notification and capacity bookkeeping). */
function checkState(state: WorldState, terminalCount: ReadonlyMap<string, number>, label: string): void {
  for (const row of state.operations) {
    const context = `${label}: ${row.id} ${row.status}`;
    expect(row.lease_token === null, context).toBe(row.status !== 'running');
    const notifications = state.notifications.filter((n) => n.operation_id === row.id);
    // exactly one notification per terminal transition, written with it
    expect(notifications.length, context).toBe(terminalCount.get(row.id) ?? 0);
    const held = state.heldSlots.filter((slot) => slot.operation_id === row.id).map((slot) => slot.pool_key).sort();
    if (isTerminal(row.status)) {
      expect(row.finished_at, context).not.toBeNull();
      expect(held, `${context}: a terminal operation holds no capacity`).toEqual([]);
      expect(notifications.find((n) => n.cycle === row.retry_count), context).toMatchObject({ status: row.status, failure_code: row.failure_code });
    } else {
      expect(held, `${context}: an active operation holds its global slot`).toEqual([`global:${FUZZ_TASK_TYPE}`]);
    }
  }
  // The owner's counters count its active operations and its running ones (the admission and fair-share running limits).
  const active = state.operations.filter((row) => !isTerminal(row.status));
  const counters = state.ownerCapacity.map((row) => ({ pair: `${row.task_type}:${row.owner_user_id}`, active: Number(row.active), running: Number(row.running) }));
  const expected = active.length === 0 && counters.length === 0 ? [] : [{ pair: `${FUZZ_TASK_TYPE}:${FUZZ_OWNER}`, active: active.length, running: active.filter((row) => row.status === 'running').length }];
  expect(counters, `${label}: owner_capacity counts the active and the running operations`).toEqual(expected);
}

describe('the transition table as a pure function', () => {
  it('nextStatus moves exactly as the docs/design.md §2 table says and refuses everything else with InvalidTransitionError', () => {
    fc.assert(
      fc.property(statusArb, eventArb, fc.uuid(), (from, event, id) => {
        const expected = DESIGN_TABLE[from][event];
        if (expected === undefined) expect(() => nextStatus(id, from, event)).toThrow(InvalidTransitionError);
        else expect(nextStatus(id, from, event)).toBe(expected);
      }),
      fuzzParameters(300),
    );
  });

  it('along any event sequence a status stays in ALL_STATUSES and leaves a terminal state only by owner retry to queued', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 60 }), (events) => {
        let status: OperationStatus = 'queued';
        for (const event of events) {
          let next: OperationStatus;
          try {
            next = nextStatus('op', status, event);
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidTransitionError);
            continue;
          }
          expect(ALL_STATUSES).toContain(next);
          if (isTerminal(status)) expect([event, next, status === 'succeeded']).toEqual(['owner_retry', 'queued', false]);
          status = next;
        }
      }),
      fuzzParameters(300),
    );
  });
});

/** Runs of the database property per dialect (each run: up to 40 steps). */
const RUNS = 60;

describe.each(DIALECTS)('random event sequences on real operations on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)(
    'every status change is a move of the transition table, terminal states only reopen by owner retry, and a refused event changes nothing',
    async () => {
      const rig = new TransitionRig(t);
      const seen = new Set<Move>();
      let runs = 0;
      const parameters = fuzzParameters<[number, number, Step[]]>(RUNS);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }), fc.array(stepArbitrary, { minLength: 10, maxLength: 40, size: 'medium' }), async (maxAttempts, initial, steps) => {
          runs++;
          await rig.reset(maxAttempts);
          for (let n = 0; n < initial; n++) await rig.admit();
          const terminalCount = new Map<string, number>();
          let before = await rig.read();
          for (const [index, step] of steps.entries()) {
            const claimWindow = step.kind === 'claim' ? { from: await rig.dbNow() } : undefined;
            const outcome = await rig.apply(step);
            if (claimWindow && outcome.target !== null) checkClaimTiming(before, outcome.target, claimWindow.from, await rig.dbNow());
            const after = await rig.read();
            for (const move of checkStep(step, outcome, before, after, terminalCount)) seen.add(move);
            checkState(after, terminalCount, `after step ${index} ${JSON.stringify(step)}`);
            before = after;
          }
        }),
        parameters,
      );
      // The generator must keep reaching every row of the table it can reach with a non-model task type.
      if (assertsCoverage(parameters, RUNS, runs)) expect([...seen].sort()).toEqual(expect.arrayContaining([...EXPECTED_MOVES]));
    },
    FUZZ_TEST_TIMEOUT_MS,
  );
});
