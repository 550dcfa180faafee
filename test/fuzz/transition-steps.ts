import fc from 'fast-check';
import { sql, type Selectable } from 'kysely';
import type { CapacitySlotsTable, OwnerCapacityTable } from '../../lib/db/database.js';
import { DurableOpsError } from '../../lib/errors.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { acknowledgeCancel, completeOperation, failOperation, fallBackToExternal } from '../../lib/operations/lease/lease-operations.js';
import { heartbeat } from '../../lib/operations/lease/heartbeat.js';
import type { NotificationRow } from '../../lib/operations/store/notification.repository.js';
import type { OperationRow } from '../../lib/operations/store/operation.repository.js';
import type { OperationEvent } from '../../lib/operations/lifecycle/operation-status.js';
import { cancelOperation, retryOperation } from '../../lib/operations/owner/owner-commands.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { runSweepOnce } from '../../lib/sweeper/run-sweep-once.js';
import { testDeps } from '../support/fixtures.js';
import type { TestDatabase } from '../support/test-store.js';
import { emptyTables } from './db-snapshot.js';

/** Which lease a worker step writes under: an index into every lease issued so far (stale ones included), or a forgery. */
interface LeaseRef {
  /** 0 is the newest lease, 1 the one before, … (modulo the leases issued). */
  readonly lease: number;
  /** Send the lease with its token altered in its last character (a wrong token for a live lease). */
  readonly forged: boolean;
}

/** One real event applied to the operations of a run, through the library functions that production calls. */
export type Step =
  | { readonly kind: 'admit' }
  | { readonly kind: 'replay'; readonly op: number }
  | { readonly kind: 'claim' }
  | ({ readonly kind: 'heartbeat'; readonly percent: number } & LeaseRef)
  | ({ readonly kind: 'complete' } & LeaseRef)
  | ({ readonly kind: 'fail'; readonly failure: 'retryable' | 'timeout' | 'permanent' } & LeaseRef)
  | ({ readonly kind: 'fallback' } & LeaseRef)
  | ({ readonly kind: 'acknowledgeCancel' } & LeaseRef)
  | { readonly kind: 'ownerCancel'; readonly op: number }
  | { readonly kind: 'ownerRetry'; readonly op: number }
  | { readonly kind: 'advanceClock'; readonly ms: number }
  | { readonly kind: 'sweep' };

/** The kind of a {@link Step}. */
export type StepKind = Step['kind'];

/**
 * The events of the transition table a step may cause (a sweep may chain two: an expired lease retried, then failed
 * past its deadline). Steps with no event never change a status.
 */
export const EVENTS_OF_STEP: Readonly<Record<StepKind, readonly OperationEvent[]>> = Object.freeze({
  admit: [],
  replay: [],
  claim: ['claim'],
  heartbeat: [],
  complete: ['complete'],
  // A failure after the owner asked to cancel ends cancelled: the worker's acknowledgement of the cancel.
  fail: ['retryable_failure', 'permanent_failure', 'acknowledge_cancel'],
  fallback: ['external_fallback', 'acknowledge_cancel'],
  acknowledgeCancel: ['acknowledge_cancel'],
  ownerCancel: ['owner_cancel', 'request_cancel'],
  ownerRetry: ['owner_retry'],
  advanceClock: [],
  sweep: ['deadline_passed', 'lease_expired_retry', 'lease_expired_final', 'lease_expired_cancelled'],
});

/** Moves of the database clock, in ms: a second, past a retry back-off, past a lease, (rarely) past the queued deadline. */
const clockMoveArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(1_000, 5_001, 30_001) },
  { weight: 1, arbitrary: fc.constant(900_001) },
);

const leaseRef = {
  lease: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.nat({ max: 15 }) }),
  forged: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
} as const;
const opRef = fc.nat({ max: 7 });

/** Random steps, weighted towards the events that move operations along. */
export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'admit' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), op: opRef }) },
  { weight: 6, arbitrary: fc.constant({ kind: 'claim' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('heartbeat' as const), percent: fc.integer({ min: -2, max: 102 }), ...leaseRef }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('complete' as const), ...leaseRef }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('fail' as const), failure: fc.constantFrom('retryable', 'timeout', 'permanent'), ...leaseRef }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fallback' as const), ...leaseRef }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('acknowledgeCancel' as const), ...leaseRef }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ownerCancel' as const), op: opRef }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ownerRetry' as const), op: opRef }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('advanceClock' as const), ms: clockMoveArb }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'sweep' as const }) },
);

/** What the database holds about the run's operations. */
export interface WorldState {
  /** Every operation row, by id. */
  readonly operations: OperationRow[];
  readonly notifications: NotificationRow[];
  /** Capacity slots held by an operation. */
  readonly heldSlots: Selectable<CapacitySlotsTable>[];
  /** The owners' capacity counters. */
  readonly ownerCapacity: Selectable<OwnerCapacityTable>[];
}

/** What applying a step did: the operation it addressed (if any) and the typed error that refused it (if any). */
export interface StepOutcome {
  readonly target: string | null;
  readonly rejected: DurableOpsError | null;
}

/** The owner of every operation the transition properties create. */
export const FUZZ_OWNER = 'fuzz-owner';

/** The task type they are admitted as (no route limit, no entitlement: only the transition table decides). */
export const FUZZ_TASK_TYPE = 'test.noop';

/**
 * Applies {@link Step}s to operations of one owner on a real test database: admission, claim, the lease writes, owner
 * cancel / retry, sweeper runs, and moves of the database clock (`TestClock`, the store's only time seam).
 */
export class TransitionRig {
  /** The services' dependencies; {@link reset} sets the attempt budget of the run. */
  deps = testDeps();
  readonly owner: OwnerScope;
  readonly worker: WorkerScope;
  /** Ids of the operations admitted in this run, in admission order. */
  readonly ops: string[] = [];
  /** Every lease issued in this run, live or stale. */
  readonly leases: ClaimedOperation[] = [];

  constructor(private readonly t: TestDatabase) {
    this.owner = new OwnerScope(t.store, FUZZ_OWNER);
    this.worker = new WorkerScope(t.store);
  }

  /**
   * Empties the operation tables and rewinds the clock: each run starts from nothing, so a replay sees the same state.
   * @param maxAttempts attempts per cycle for this run (1–3): small budgets reach the final-attempt branches (lease
   * expired on the final attempt, retries exhausted) within a short sequence.
   */
  async reset(maxAttempts: number): Promise<void> {
    this.deps = testDeps({ maxAttempts });
    await emptyTables(this.t.store, ['operation_notifications', 'operation_key_aliases', 'capacity_slots', 'owner_capacity', 'operations']);
    this.t.clock.offsetMs = 0;
    this.ops.length = 0;
    this.leases.length = 0;
  }

  /** Reads the state the properties compare before and after each step. */
  async read(): Promise<WorldState> {
    const db = this.t.store.db;
    return {
      operations: await db.selectFrom('operations').selectAll().orderBy('id').execute(),
      notifications: await db.selectFrom('operation_notifications').selectAll().orderBy('operation_id').orderBy('cycle').execute(),
      heldSlots: await db.selectFrom('capacity_slots').selectAll().where('operation_id', 'is not', null).orderBy('pool_key').orderBy('slot_no').execute(),
      ownerCapacity: await db.selectFrom('owner_capacity').selectAll().orderBy('task_type').orderBy('owner_user_id').execute(),
    };
  }

  /** The database clock now (test offset included), in the format the time columns hold: comparable as strings. */
  async dbNow(): Promise<string> {
    const { rows } = await sql<{ now: string }>`select ${this.t.store.timeAt()} as now`.execute(this.t.store.db);
    return rows[0]!.now;
  }

  /** Admits a new operation under a fresh key and remembers it. */
  async admit(): Promise<string> {
    const { operation } = await admitOperation(this.owner, this.deps, `fuzz-key-${this.ops.length}`, this.body(this.ops.length));
    this.ops.push(operation.id);
    return operation.id;
  }

  /** The operation a step addresses, or null when nothing is there to address. */
  target(step: Step): string | null {
    if ('op' in step) return this.ops.length === 0 ? null : this.ops[step.op % this.ops.length]!;
    if ('lease' in step) return this.leaseOf(step)?.operationId ?? null;
    return null;
  }

  /**
   * Applies `step`. A {@link DurableOpsError} (the typed refusals: lease lost, invalid transition, retry limit…) is
   * returned as `rejected`; any other error is a failure of the property and propagates.
   */
  async apply(step: Step): Promise<StepOutcome> {
    const target = this.target(step);
    try {
      return { target: (await this.run(step)) ?? target, rejected: null };
    } catch (error) {
      if (error instanceof DurableOpsError) return { target, rejected: error };
      throw error;
    }
  }

  private body(n: number) {
    return { taskType: FUZZ_TASK_TYPE, subject: { type: 'doc', id: `d${n}` }, params: { n } };
  }

  private leaseOf(ref: LeaseRef): ClaimedOperation | undefined {
    const lease = this.leases.length === 0 ? undefined : this.leases[this.leases.length - 1 - (ref.lease % this.leases.length)];
    if (!lease || !ref.forged) return lease;
    return { ...lease, leaseToken: `${lease.leaseToken.slice(0, -1)}${lease.leaseToken.endsWith('0') ? '1' : '0'}` };
  }

  /** Runs one step; returns the operation a claim took (the others' target is known beforehand). */
  private async run(step: Step): Promise<string | null | undefined> {
    const id = this.target(step);
    switch (step.kind) {
      case 'admit':
        return this.admit();
      case 'replay': {
        if (id === null) return undefined;
        const n = this.ops.indexOf(id);
        const again = await admitOperation(this.owner, this.deps, `fuzz-key-${n}`, this.body(n));
        if (!again.replayed || again.operation.id !== id) throw new Error(`replay of fuzz-key-${n} answered ${again.operation.id}, not ${id}`);
        return undefined;
      }
      case 'claim': {
        const claim = await claimNextOperation(this.worker, this.deps);
        if (claim) this.leases.push(claim);
        return claim?.operationId ?? null;
      }
      case 'ownerCancel':
        if (id !== null) await cancelOperation(this.owner, id);
        return undefined;
      case 'ownerRetry':
        if (id !== null) await retryOperation(this.owner, this.deps, id);
        return undefined;
      case 'advanceClock':
        this.t.clock.advance(step.ms);
        return undefined;
      case 'sweep':
        await runSweepOnce({ ...this.deps, store: this.t.store, batchSize: 50, timeBudgetMs: 30_000 });
        return undefined;
      default:
        await this.runUnderLease(step);
        return undefined;
    }
  }

  private async runUnderLease(step: Extract<Step, LeaseRef>): Promise<void> {
    const lease = this.leaseOf(step);
    if (!lease) return;
    const scope = enterOwnerScope(this.worker, lease);
    switch (step.kind) {
      case 'heartbeat':
        await heartbeat(scope, lease, { percent: step.percent, stage: 'fuzzing' });
        return;
      case 'complete':
        await completeOperation(scope, lease);
        return;
      case 'fail':
        await failOperation(scope, lease, { kind: step.failure, message: `fuzz ${step.failure}` }, 5_000, 60_000);
        return;
      case 'fallback':
        await fallBackToExternal(scope, lease, 'fuzz fallback', 60_000);
        return;
      case 'acknowledgeCancel':
        await acknowledgeCancel(scope, lease);
        return;
    }
  }
}
