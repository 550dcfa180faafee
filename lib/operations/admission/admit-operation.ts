import { takeAdmissionToken } from '../../capacity/admission-rate.js';
import { globalPoolKey, prepareAdmissionPools, reserveAdmission, restoreMissingPools } from '../../capacity/capacity.js';
import type { CapacityPolicy } from '../../capacity/capacity-policy.js';
import { callerTransaction, inOwnOrCallerTransaction, inSavepoint, once, oneStepAtATime, type AfterCommit, type InCallerTransaction } from '../../db/caller-transaction.js';
import type { Database, TxContext } from '../../db/database.js';
import { viaRoutine } from '../../db/server-routine.js';
import { CapacityExhaustedError, IdempotencyKeyReusedError, NotEntitledError, RateLimitedError, ValidationError } from '../../errors.js';
import { recheckOwner } from '../../owners/owner-recheck.js';
import type { Logger } from '../../logger.js';
import { recordLifecycle } from '../../observability/lifecycle-events.js';
import type { OpsMetrics } from '../../observability/metrics.js';
import type { WakeupSender } from '../../queue/wakeup-sender.js';
import { sendWakeup } from '../../queue/send-wakeup.js';
import type { TaskDefinition } from '../../tasks/task-definition.js';
import type { TaskRegistry } from '../../tasks/task-registry.js';
import { inSpan, SpanAttr } from '../../tracing/spans.js';
import { AdmitRequestSchema, IdempotencyKeySchema, type AdmitRequest } from './admission-schema.js';
import { FieldLimits } from '../../validation/field-limits.js';
import { reuseActiveOperation } from './exclusive-subject.js';
import { findReplay } from './idempotent-replay.js';
import { newOperationId } from '../operation-id.js';
import { callAdmitOperation } from './admission-procedure.repository.js';
import type { OperationRow } from '../store/operation.repository.js';
import { admitQueued } from '../lifecycle/transitions.js';
import { newTurnSeed } from '../lease/owner-turns.repository.js';
import { taskPolicy, type OperationPolicy } from '../operation-policy.js';
import { canonicalJson, requestHash } from '../../hashing/request-hash.js';
import { assertOwnerScope, type OwnerScope } from '../scopes.js';
import { parseOrThrow } from '../../validation/parse-or-throw.js';
import { admissionSchedule, delayMsOf, hashedDelay, parseRequestedDelay, type RequestedDelay } from './admission-delay.js';
import { operationPriorityOf } from './operation-priority.js';

/** What admission needs besides the owner scope. */
export interface AdmissionDeps {
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
  readonly wakeups: WakeupSender;
  readonly logger: Logger;
  /** Counts admissions, replays, reuses, capacity rejections and rate-limit rejections. */
  readonly metrics: OpsMetrics;
  readonly capacity: CapacityPolicy;
}

/** The result of {@link admitOperation}: the operation, and whether it already existed for this key. */
export interface Admission {
  readonly operation: OperationRow;
  /** True when the same owner already admitted the same request under this key (HTTP 200 + `Idempotent-Replayed`). */
  readonly replayed: boolean;
  /**
   * True when the task type has an exclusive subject and the owner's active operation on it is returned instead of a
   * new one (HTTP 200); the key is then bound to it.
   */
  readonly reused?: boolean;
}

/**
 * The result of {@link admitOperation} inside the caller's transaction (`{ transaction }`): the {@link Admission} as
 * it will be once the caller commits, and `afterCommit()`, which the caller calls after its commit to send the
 * wake-up and record the admission (a replay or a reused operation sends nothing). See {@link AfterCommit}.
 */
export interface TransactionalAdmission extends Admission, AfterCommit {}

/** Options of {@link admitOperation}. @see InCallerTransaction */
export type AdmitOptions<DB extends Database = Database> = Partial<InCallerTransaction<DB>>;

/**
 * Admits one operation for the owner, idempotently (docs/design.md §2, §4): validates the request and the task type's
 * params, rechecks the owner's live settings (entitlement; plan for the limits), binds the idempotency key to the
 * canonical request hash, and in **one transaction** inserts a `queued` row (privacy mode snapshotted, deadline from
 * the task policy), spends one token of the owner's admission rate bucket for the task type when the task type and plan
 * have a `rate` (`takeAdmissionToken`, docs/design.md §4, admission rate) and reserves an owner slot and a global slot;
 * after the commit it sends the SQS wake-up. A failed send is logged, not thrown: the row is durable and the sweeper
 * re-sends wake-ups for rows left unclaimed.
 *
 * On MariaDB all of that but the validation and the wake-up is **one round trip**: one `CALL admit_operation_v2`
 * makes the same decision server-side (docs/design.md §9) for every task type without an exclusive subject or an
 * admission rate, and every request without a delay; those, and every admission on SQLite, run the statements below
 * from here.
 *
 * **Priority and delay** (docs/design.md §4), each only for a task type that opts in, and both bound by the request
 * hash (the same key with another `priority`, `delaySeconds` or `runAt` is a 422): `priority` is stored on the row and
 * orders the owner's own queue of the type (`operationPriorityOf`); `delaySeconds` (seconds) or `runAt` (RFC 3339; one
 * of them) makes the `queued` row claimable only from then on, on the database clock, with its queued deadline counted
 * from then and its wake-up an SQS message delayed by up to 900 s, or beyond that the sweeper's due wake-up
 * (`admission-delay.ts`). A delayed operation holds its owner's admission capacity while it waits, and is cancelled
 * like any queued one.
 *
 * Only a new operation spends a token: it is taken after the insert, so a duplicate key (a replay, or a 422 key reuse)
 * fails before it and the rollback leaves the bucket as it was; a reused active operation returns before it. The token
 * is taken before the slots, so an owner waiting on their bucket's row lock holds no slot locks other owners could
 * trip over, and a rate-limited request never searches the pools for a slot.
 *
 * Concurrent duplicates resolve through the unique index (owner, task type, key), never a read-then-insert:
 * ```
 *   A: INSERT ok ───────────────────────────── commit → 202
 *   B: INSERT → duplicate key → SELECT by key → same hash → 200 replayed
 * ```
 * A task type with an `exclusiveSubject` (docs/design.md §2: reuse an active operation for the same subject) accepts only its
 * subject type; in the admission transaction the subject row is locked and, when the owner already has an active
 * operation of the type on it, that one is answered (`reused: true`) and the key bound to it (`operation_key_aliases`),
 * so concurrent clicks end with one operation and a replay of any of their keys answers it.
 *
 * Each outcome is recorded once (`recordLifecycle`): `operation_admitted`, `operation_replayed` or `operation_reused`
 * with the operation id; a full pool as `capacity_rejected` with its kind (`owner` | `global`) and no id; an empty rate
 * bucket as `rate_limited` (`RateLimited`) with no id.
 * @param input `{ taskType, subject: { type, id }, params?, priority?, delaySeconds? | runAt? }` (see `AdmitRequestSchema`).
 * @throws {ValidationError} malformed input, key or params, or a subject type the task does not accept (HTTP 400);
 * a `priority`, `delaySeconds` or `runAt` the task type does not accept or outside its bounds, or both delay fields
 * (HTTP 400, the issue naming the field).
 * @throws the subject's not-found error (HTTP 404) for an exclusive-subject task whose subject is not the owner's.
 * @throws {UnknownTaskTypeError} unregistered task type (HTTP 400).
 * @throws {IdempotencyKeyReusedError} same key, different request (HTTP 422).
 * @throws {NotEntitledError} the owner's settings do not allow the task type (HTTP 403); nothing written.
 * @throws {CapacityExhaustedError} a per-owner or global limit is full (HTTP 429); no row, no slot, no token, no message.
 * @throws {RateLimitedError} the owner's admission rate bucket for the task type is empty (HTTP 429 `rate_limited`,
 * `Retry-After` = its `retryAfterSeconds`); no row, no slot, no bucket change, no message.
 *
 * **Inside the caller's transaction** (`options.transaction`, docs/design.md §4 "Admission inside the caller's
 * transaction"): every statement — the owner recheck, the replay reads, the creation of missing capacity rows, the
 * insert, the token, the reservation, the turn — runs on the caller's open transaction, in-process on both databases
 * (never `admit_operation_v2`, which is a transaction of its own), behind a savepoint: the operation and its capacity
 * commit or roll back with the caller's own rows. Every refusal above is thrown with the caller's transaction usable
 * and unchanged (rolled back to the savepoint); the caller decides whether to commit the rest. Nothing is sent: the
 * answer's `afterCommit()` sends the wake-up (and records the admission) once the caller committed; a caller that
 * dies first leaves it to the sweeper (`wake_at`, at most `WAKEUP_RESEND_SECONDS` + one sweep interval later).
 * Admissions on one transaction run one at a time. On SQLite the caller's transaction holds the store's one
 * connection — and, from its first write, the database's one write lock — until it ends, so keep it short.
 * ```
 *   caller:  BEGIN ── own rows ── admitOperation(…, { transaction }) ── own rows ── COMMIT ── afterCommit() → SQS
 *   crash after COMMIT: ─────────────────────────────────────────────── sweeper at wake_at → SQS
 *   ROLLBACK instead:   no row, no capacity, no token, no message
 * ```
 * @param options `{ transaction }`: the caller's open kysely transaction on `scope.store.db` (see {@link InCallerTransaction}).
 * @throws {ForeignTransactionError} `transaction` is not a kysely transaction on `scope.store.db`; nothing written.
 * @throws a transient driver error (MariaDB deadlock or lock wait timeout, `SQLITE_BUSY`) as it is, inside the caller's
 * transaction: not retried here (a MariaDB deadlock has rolled the whole transaction back) — run the transaction again.
 */
export async function admitOperation(scope: OwnerScope, deps: AdmissionDeps, idempotencyKey: unknown, input: unknown): Promise<Admission>;
export async function admitOperation<DB extends Database>(
  scope: OwnerScope,
  deps: AdmissionDeps,
  idempotencyKey: unknown,
  input: unknown,
  options: InCallerTransaction<DB>,
): Promise<TransactionalAdmission>;
export async function admitOperation<DB extends Database>(
  scope: OwnerScope,
  deps: AdmissionDeps,
  idempotencyKey: unknown,
  input: unknown,
  options?: AdmitOptions<DB>,
): Promise<Admission>;
export async function admitOperation<DB extends Database>(
  scope: OwnerScope,
  deps: AdmissionDeps,
  idempotencyKey: unknown,
  input: unknown,
  options: AdmitOptions<DB> = {},
): Promise<Admission | TransactionalAdmission> {
  assertOwnerScope(scope);
  const caller = options.transaction ? callerTransaction(scope.store, options.transaction) : undefined;
  const parsed = parseAdmission(deps.registry, idempotencyKey, input);
  const taskType = parsed.request.taskType;
  let admission: PendingAdmission;
  try {
    admission =
      caller
        ? // The whole admission behind a savepoint: a refusal takes back even the capacity rows it created.
          await oneStepAtATime(caller, () => inSavepoint(scope.store.caps, caller, (tx) => admitInProcess(scope, deps, parsed, tx)))
        : await admissionSpan(taskType, () => admitParsed(scope, deps, parsed));
  } catch (error) {
    if (error instanceof CapacityExhaustedError) recordLifecycle(deps, { event: 'capacity_rejected', taskType, pool: error.pool });
    if (error instanceof RateLimitedError) recordLifecycle(deps, { event: 'rate_limited', taskType });
    throw error;
  }
  const event = admission.replayed ? 'operation_replayed' : admission.reused ? 'operation_reused' : 'operation_admitted';
  const record = () => recordLifecycle(deps, { event, operationId: admission.operation.id, taskType, status: admission.operation.status });
  const { wakeUp, ...answer } = admission;
  if (!caller) {
    record();
    return answer;
  }
  // Recorded once the caller says it committed: an admission rolled back with the caller's rows never happened.
  return {
    ...answer,
    afterCommit: once(async () => {
      record();
      await wakeUp?.();
    }),
  };
}

/**
 * Runs one admission (with its wake-up) inside an `admission` span: the task type, then the operation id and the
 * outcome (`admitted`, `replayed` or `reused`); a refusal is the span's error, by class name only.
 */
async function admissionSpan(taskType: string, admit: () => Promise<PendingAdmission>): Promise<PendingAdmission> {
  return inSpan('admission', { attributes: { [SpanAttr.taskType]: taskType } }, async (span) => {
    const admission = await admit();
    span.setAttribute(SpanAttr.operationId, admission.operation.id);
    span.setAttribute(SpanAttr.outcome, admission.replayed ? 'replayed' : admission.reused ? 'reused' : 'admitted');
    return admission;
  });
}

/** An admission as its path answers it: with a caller's transaction, the wake-up to send after the caller's commit. */
type PendingAdmission = Admission & { readonly wakeUp?: () => Promise<void> };

/**
 * A validated admission request: the key, the body, its task, canonical params, request hash, the per-operation
 * priority to store (`operationPriorityOf`) and the delay asked for (`parseRequestedDelay`).
 */
interface ParsedAdmission {
  readonly key: string;
  readonly request: AdmitRequest;
  readonly task: TaskDefinition;
  readonly paramsJson: string;
  readonly hash: string;
  readonly priority: number;
  readonly delay: RequestedDelay;
}

function parseAdmission(registry: TaskRegistry, idempotencyKey: unknown, input: unknown): ParsedAdmission {
  const key = parseOrThrow(IdempotencyKeySchema, idempotencyKey, 'Idempotency-Key');
  const request = parseOrThrow(AdmitRequestSchema, input, 'body');
  const task = registry.get(request.taskType);
  const params = parseOrThrow(task.paramsSchema, request.params ?? {}, 'params');
  const paramsJson = canonicalJson(params);
  if (paramsJson.length > FieldLimits.paramsJson) {
    throw new ValidationError('Invalid params.', [{ path: 'params', message: `must encode to at most ${FieldLimits.paramsJson} characters` }]);
  }
  const exclusive = task.exclusiveSubject;
  if (exclusive && request.subject.type !== exclusive.type) {
    throw new ValidationError('Invalid body.', [{ path: 'body.subject.type', message: `must be "${exclusive.type}" for ${request.taskType}` }]);
  }
  const priority = operationPriorityOf(task, request.priority);
  const delay = parseRequestedDelay(task, request);
  const hash = requestHash(request.taskType, request.subject, params, { priority: request.priority, ...hashedDelay(delay) });
  return { key, request, task, paramsJson, hash, priority, delay };
}

async function admitParsed(scope: OwnerScope, deps: AdmissionDeps, parsed: ParsedAdmission): Promise<Admission> {
  // A delayed admission (`admit_operation_v2` takes no delay: docs/design.md §9) runs in-process, like the two above.
  if (parsed.task.exclusiveSubject || mayRateLimit(deps.capacity, parsed.request.taskType) || parsed.delay.kind !== 'none') {
    return admitInProcess(scope, deps, parsed);
  }
  return viaRoutine(scope.store, () => admitInOneCall(scope, deps, parsed), () => admitInProcess(scope, deps, parsed));
}

/** Whether any plan has an admission rate for the task type (then admission spends a token: the in-process path). */
function mayRateLimit(capacity: CapacityPolicy, taskType: string): boolean {
  return [...capacity.planNames, '*'].some((plan) => capacity.admissionRate(taskType, plan) !== undefined);
}

/**
 * The admission as one `CALL admit_operation_v2` (MariaDB, `caps.serverRoutines`; docs/design.md §9): the same
 * decision as {@link admitInProcess} — owner recheck, insert with its idempotency outcome, turn, both slots — made
 * server-side in one round trip, for task types with no exclusive subject and no admission rate (those lock a subject
 * row the task defines, or spend a token, and take the in-process path), for requests without a delay (the routine
 * sets `available_at` to now; a delayed one takes the in-process path too) — with the request's per-operation
 * priority as `p_priority`. Run through `viaRoutine` (a deadlock is
 * retried; a routine not there yet falls back in-process); a duplicate key whose row vanished before it was read
 * (`retry`) is called again with a new id, as in-process.
 */
async function admitInOneCall(scope: OwnerScope, deps: AdmissionDeps, { key, request, task, paramsJson, hash, priority }: ParsedAdmission): Promise<Admission> {
  const policy = taskPolicy(task, deps.policy);
  const { store, ownerUserId } = scope;
  const { taskType } = request;
  for (let race = 0; ; race++) {
    const id = newOperationId();
    const answer = await callAdmitOperation(store, deps.capacity, {
        row: {
          id,
          owner_user_id: ownerUserId,
          task_type: taskType,
          idempotency_key: key,
          request_hash: hash,
          subject_type: request.subject.type,
          subject_id: request.subject.id,
          params_json: paramsJson,
          priority,
          max_attempts: policy.maxAttempts,
        },
        deadlineMs: policy.deadlineMs,
        wakeMs: deps.policy.wakeupResendMs,
        turnSeed: newTurnSeed(),
        task,
        globalPool: globalPoolKey(taskType),
        globalLimit: deps.capacity.admissionLimits(taskType, '*').global,
    });
    switch (answer.outcome) {
      case 'admitted':
        await sendWakeup(deps, { v: 1, reason: 'admitted', operationId: id });
        return { operation: answer.row, replayed: false };
      case 'replayed':
        return { operation: answer.row, replayed: true };
      case 'key_reused':
        throw new IdempotencyKeyReusedError();
      case 'not_entitled':
        throw new NotEntitledError(taskType);
      case 'owner_full':
        throw new CapacityExhaustedError('owner', deps.capacity.retryAfterSeconds);
      case 'global_full':
        throw new CapacityExhaustedError('global', deps.capacity.retryAfterSeconds);
      case 'retry':
        if (race < 2) continue;
        throw new Error('Idempotency key kept colliding with a vanishing row');
    }
  }
}

/**
 * The admission statement by statement in one transaction: SQLite always, MariaDB for task types with an exclusive
 * subject or an admission rate, and for a request with a delay. With `caller` (the caller's open transaction) every statement runs on it, the
 * admission's writes behind a savepoint of their own (`inOwnOrCallerTransaction`), and the wake-up is left to the
 * caller's `afterCommit()` (`wakeUp`).
 */
async function admitInProcess(
  scope: OwnerScope,
  deps: AdmissionDeps,
  { key, request, task, paramsJson, hash, priority, delay }: ParsedAdmission,
  caller?: TxContext,
): Promise<PendingAdmission> {
  const exclusive = task.exclusiveSubject;
  const policy = taskPolicy(task, deps.policy);
  const store = scope.store;
  const ctx = caller ?? store;
  // When it becomes claimable (a `runAt` is measured from the database clock), its deadline, wake-up and hint.
  const schedule = admissionSchedule(await delayMsOf(ctx, delay), policy.deadlineMs, deps.policy.wakeupResendMs);
  // In the caller's transaction (its isolation is the caller's), a replay reads the latest committed rows.
  const replayOf = () => findReplay(ctx, scope.ownerUserId, request.taskType, key, hash, exclusive !== undefined, caller !== undefined && store.caps.rowLocks);
  const owner = await recheckOwner(ctx, scope.ownerUserId, task);
  if (!owner.entitled) {
    // A replay of an admission made while entitled still answers with that operation (docs/design.md §7); only new work is refused.
    const replay = await replayOf().catch(() => undefined);
    if (replay) return { operation: replay, replayed: true };
    throw new NotEntitledError(request.taskType);
  }
  if (exclusive) {
    // Reuse must not hide a replay: a key already used answers as a replay (or 422) before any reuse.
    const replay = await replayOf();
    if (replay) return { operation: replay, replayed: true };
  }
  const pools = await prepareAdmissionPools(store, deps.capacity, request.taskType, scope.ownerUserId, owner.plan, caller);
  const rate = deps.capacity.admissionRate(request.taskType, owner.plan);
  // A duplicate key whose row is gone by the re-read (purged in between) is retried: the next insert succeeds.
  for (let race = 0; ; race++) {
    const id = newOperationId();
    let reused: OperationRow | undefined;
    let inserted: OperationRow | undefined;
    try {
      await inOwnOrCallerTransaction(store, caller, async (tx) => {
        reused = exclusive
          ? await reuseActiveOperation(
              tx,
              exclusive,
              { ownerUserId: scope.ownerUserId, taskType: request.taskType, subject: request.subject, rowLocks: store.caps.rowLocks },
              { idempotencyKey: key, requestHash: hash },
            )
          : undefined;
        if (reused) return;
        inserted = await admitQueued(
          tx,
          {
            id,
            owner_user_id: scope.ownerUserId,
            task_type: request.taskType,
            idempotency_key: key,
            request_hash: hash,
            subject_type: request.subject.type,
            subject_id: request.subject.id,
            params_json: paramsJson,
            privacy_mode: owner.privacyMode,
            priority,
            max_attempts: policy.maxAttempts,
          },
          schedule,
          async () => {
            // After the insert (a duplicate key never spends a token), before the capacity (see above).
            if (rate) await takeAdmissionToken(tx, store.caps, { taskType: request.taskType, ownerUserId: scope.ownerUserId }, rate);
            await reserveAdmission(tx, store.caps.skipLocked, pools, id);
          },
        );
      });
    } catch (error) {
      // "Full" from a pool whose rows vanished since this process last saw them: re-create them and try again.
      if (error instanceof CapacityExhaustedError && race < 2 && (await restoreMissingPools(store, pools, caller))) continue;
      if (!store.caps.isDuplicateKey(error)) throw error;
      const replay = await replayOf();
      if (!replay && race < 2) continue;
      if (!replay) throw new Error('Idempotency key kept colliding with a vanishing row');
      return { operation: replay, replayed: true };
    }
    if (reused) return { operation: reused, replayed: false, reused: true };
    if (!inserted) throw new Error(`Operation ${id} committed without its inserted row`);
    // Beyond SQS's longest delay no hint goes now: the sweeper's due wake-up sends it (`wake_at` = `available_at`).
    const hintDelay = schedule.hintDelaySeconds;
    const wakeUp = async () => {
      if (hintDelay !== undefined) await sendWakeup(deps, { v: 1, reason: 'admitted', operationId: id }, hintDelay);
    };
    if (caller) return { operation: inserted, replayed: false, wakeUp };
    await wakeUp();
    return { operation: inserted, replayed: false };
  }
}
