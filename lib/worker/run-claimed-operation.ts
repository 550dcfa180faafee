import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { LeaseLostError } from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import { recordLifecycle } from '../observability/lifecycle-events.js';
import type { OpsMetrics } from '../observability/metrics.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { acknowledgeCancel, cancelRequestedUnderLease, completeOperation } from '../operations/lease/lease-operations.js';
import type { FailureKind } from '../operations/lifecycle/attempt-outcome.js';
import { taskPolicy, type OperationPolicy } from '../operations/operation-policy.js';
import type { OwnerScope } from '../operations/scopes.js';
import { recheckOf, recheckOwner } from '../owners/owner-recheck.js';
import type { WakeupSender } from '../queue/wakeup-sender.js';
import type { ResultObjects } from '../results/result-objects.js';
import type { TaskCompletion, TaskContext } from '../tasks/task-definition.js';
import type { BreakerPermit } from '../ai/circuit-breaker.js';
import type { ModelRoutes } from '../ai/model-routes.js';
import { openModelSession } from '../ai/model-session.js';
import { externalAllowed } from '../ai/route-permits.js';
import { ModelCallError } from '../models/model-errors.js';
import type { TaskRegistry } from '../tasks/task-registry.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { inSpan, SpanAttr } from '../tracing/spans.js';
import { attemptEvent, type AttemptEnd } from './attempt-end.js';
import { classifyFailure, endFailedAttempt } from './attempt-end-step.js';
import { startHeartbeats } from './heartbeat-loop.js';
import { chooseModelRoute } from './model-route-choice.js';

/** What running a claimed operation needs. */
export interface RunDeps {
  readonly registry: TaskRegistry;
  readonly policy: OperationPolicy;
  readonly wakeups: WakeupSender;
  readonly logger: Logger;
  /** Counts claims and how attempts ended (README "Logs and metrics"). */
  readonly metrics: OpsMetrics;
  /** Jitter source in [0, 1). @default Math.random */
  readonly random?: () => number;
  /** Result-object publishing handed to tasks as `TaskContext.results`. @default none (not configured) */
  readonly results?: ResultObjects;
  /** The model routes of model tasks (docs/design.md §5). @default none: a model task's run fails retryably */
  readonly models?: ModelRoutes;
}

/** How one run ended. `lease_lost` means another party owns the operation now and nothing was written. */
export type RunOutcome = 'succeeded' | 'waiting_for_retry' | 'waiting_for_external_fallback' | 'failed' | 'cancelled' | 'lease_lost';

/** Milliseconds kept back from the Lambda's remaining time for the final write. */
export const TIMEOUT_SAFETY_MS = 5_000;

/** Longest wait, in ms, for an aborted handler to return before its outcome is written (also at most a third of the lease). */
export const ABORT_GRACE_MAX_MS = 10_000;

/** Why a run's handler was aborted: the owner's cancel, the lease lost or fenced (both write nothing), the timeout. */
type AbortCause = 'cancel' | 'lease_lost' | 'fenced' | 'timeout';

/**
 * Runs one claimed operation in its owner scope (docs/design.md §5): rechecks cancellation and entitlement, runs the task handler with an
 * `AbortSignal`, heartbeats the lease every `heartbeatMs` (at most a quarter of the lease; a heartbeat that reports a cancel request aborts the
 * handler), enforces `min(task timeout, remaining time − 5 s)`, classifies the result and commits the terminal state
 * (or the retry) under the lease.
 *
 * ```
 *  claim ── heartbeat ── run ─┬─ ok ─────────────── complete            → succeeded (+ notification)
 *                             ├─ cancel seen ─────── acknowledge-cancel  → cancelled (+ notification)
 *                             ├─ timeout / error ─── fail                → waiting_for_retry | failed
 *                             ├─ local model failed, external allowed ──→ waiting_for_external_fallback
 *                             └─ lease lost / fenced ─ (write nothing: the sweeper or another worker owns it)
 * ```
 * The attempt fences itself (see `startHeartbeats`): when its local lease deadline passes without an acknowledged
 * heartbeat — the database unreachable, or its answers lost — the handler is aborted and nothing more is written.
 * A model task (docs/design.md §5) gets `context.model` on the route its claim chose — local, or external on a claim from
 * `waiting_for_external_fallback` — which records provenance and feeds the route's breaker. Its retryable failures
 * (timeout, 5xx, connection) on the local route fall back to the external route when {@link externalAllowed} and an
 * attempt is left; invalid output ends as `invalid_model_output`, a refused request as `model_rejected`.
 *
 * How the attempt ended is recorded once, after its write committed (`attemptEvent`: one log line with the operation
 * id, its metric with the task type). The attempt is one `attempt` span (operation id, task type, attempt number, outcome); the write that ends it is its
 * `completion` child and each model request a `model call` child (README "Tracing").
 * @param remainingMs the invocation's remaining time in ms (Lambda `context.getRemainingTimeInMillis`).
 * @param modelPermit the breaker permit the claimer took for the run's model route. @default a plain permit
 * @param claimSentAt `performance.now()` just before the claim was sent: the self-fence counts the lease from it.
 * @default now (a caller that claims just before the run)
 * @throws database errors other than a lost lease (the SQS message is then retried; the lease will expire).
 */
export async function runClaimedOperation(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  remainingMs: () => number,
  modelPermit: BreakerPermit = { trial: false },
  claimSentAt: number = performance.now(),
): Promise<RunOutcome> {
  return (await runClaimedAttempt(owner, claim, deps, remainingMs, modelPermit, claimSentAt)).outcome;
}

/**
 * {@link runClaimedOperation}, answering how the attempt ended in full (`AttemptEnd`): the worker reads from a success
 * whether its completion already saw the owner's due work.
 * @param claimedJustNow true when the claim committed just before this call (the worker: claim, then run at once):
 * the pre-run rechecks then use the claim's own read after its commit (`ClaimedOperation.afterClaim`) instead of
 * reading again. A caller that runs a claim later passes false, and the rechecks read.
 */
export async function runClaimedAttempt(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  remainingMs: () => number,
  modelPermit: BreakerPermit = { trial: false },
  claimSentAt: number = performance.now(),
  claimedJustNow = false,
): Promise<AttemptEnd> {
  const attributes = { [SpanAttr.operationId]: claim.operationId, [SpanAttr.taskType]: claim.taskType, [SpanAttr.attempt]: claim.attempt };
  return inSpan('attempt', { attributes }, async (span) => {
    const started = performance.now();
    let end: AttemptEnd;
    try {
      end = await runAttempt(owner, claim, deps, remainingMs, modelPermit, claimSentAt, claimedJustNow ? claim.afterClaim : undefined);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
      end = { outcome: 'lease_lost' };
    }
    span.setAttribute(SpanAttr.outcome, end.outcome);
    recordLifecycle(deps, attemptEvent(claim, end, Math.round(performance.now() - started)));
    return end;
  });
}

/** Runs the write that ends an attempt (its outcome under the lease) inside a `completion` span naming the outcome. */
function completion(write: () => Promise<AttemptEnd>): Promise<AttemptEnd> {
  return inSpan('completion', {}, async (span) => {
    const end = await write();
    span.setAttribute(SpanAttr.outcome, end.outcome);
    return end;
  });
}

/** {@link completion} of an acknowledged cancel. */
function cancelled(owner: OwnerScope, claim: ClaimedOperation): Promise<AttemptEnd> {
  return completion(async () => {
    await acknowledgeCancel(owner, claim);
    return { outcome: 'cancelled' };
  });
}

async function runAttempt(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  remainingMs: () => number,
  modelPermit: BreakerPermit,
  claimSentAt: number,
  seen: ClaimedOperation['afterClaim'],
): Promise<AttemptEnd> {
  const task = deps.registry.get(claim.taskType);
  const policy = taskPolicy(task, deps.policy);
  const failed = (kind: FailureKind, message: string) => completion(() => endFailedAttempt(owner, claim, deps, { kind, message }, policy.retry));
  // Cancellation is rechecked before the run with one read (no heartbeat write: the claim has just set the lease) —
  // or from the claim's own read after its commit (`afterClaim`); a cancel requested after this is seen at the next
  // heartbeat, as during any run.
  if (seen && !seen.leaseHeld) throw new LeaseLostError(claim.operationId);
  if (seen ? seen.cancelRequested : await cancelRequestedUnderLease(owner, claim)) return await cancelled(owner, claim);
  // Entitlement and privacy are rechecked live before every run and fail closed (docs/design.md §4, §5). A task type with
  // neither an entitlement nor a model reads no settings.
  let privacyMode = claim.privacyMode;
  if (task.entitlement !== undefined || task.model !== undefined) {
    const live = seen ? recheckOf(seen.ownerSettings, task, claim.privacyMode) : await recheckOwner(owner.store, owner.ownerUserId, task, claim.privacyMode);
    if (!live.entitled) return await failed('entitlement_revoked', 'the owner is no longer entitled to this task type');
    privacyMode = live.privacyMode;
  }
  let params: unknown;
  try {
    params = parseOrThrow(task.paramsSchema, JSON.parse(claim.paramsJson), 'params');
  } catch (error) {
    return await failed('permanent', `stored params no longer valid: ${describeError(error).errorMessage}`);
  }
  const choice = chooseModelRoute(task, claim, privacyMode, deps.models);
  if ('unavailable' in choice) {
    // Fail closed: the route is not configured here, or the operation may no longer leave the local route.
    choice.route?.breaker.release(modelPermit);
    return await failed('retryable', choice.unavailable);
  }
  const route = choice.route;

  const controller = new AbortController();
  let cause: AbortCause | undefined;
  const abort = (why: AbortCause) => {
    if (cause) return;
    cause = why;
    controller.abort(new Error(`aborted: ${why}`));
  };
  const timeoutMs = Math.max(1, Math.min(policy.timeoutMs, remainingMs() - TIMEOUT_SAFETY_MS));
  const timesOutAt = performance.now() + timeoutMs;
  // A task type may lease for less than the process-wide heartbeat; beat at least four times per lease, so that with
  // the default fence margin (one interval) one failed heartbeat is survived and the next one renews the lease.
  const intervalMs = Math.min(deps.policy.heartbeatMs, Math.floor(policy.leaseMs / 4));
  const heartbeats = startHeartbeats(owner, claim, { intervalMs, fenceMarginMs: deps.policy.fenceMarginMs ?? intervalMs, claimSentAt }, deps.logger, abort);
  const model = route
    ? openModelSession({
        route,
        permit: modelPermit,
        owner,
        claim,
        signal: controller.signal,
        taskTimeLeftMs: () => timesOutAt - performance.now(),
        requestTimeoutMs: deps.models?.requestTimeoutMs ?? timeoutMs,
        leaseHeld: heartbeats.leaseHeld,
        ...(task.model?.inferencesPerAttempt ? { inferencesPerAttempt: task.model.inferencesPerAttempt } : {}),
      })
    : undefined;
  const timeout = setTimeout(() => abort('timeout'), timeoutMs);

  const context: TaskContext<unknown> = {
    operationId: claim.operationId,
    ownerUserId: claim.ownerUserId,
    scope: owner,
    subject: claim.subject,
    params,
    attempt: claim.attempt,
    maxAttempts: claim.maxAttempts,
    signal: controller.signal,
    results: deps.results,
    ...(model ? { model: model.session } : {}),
    leaseHeld: heartbeats.leaseHeld,
    reportProgress: (percent, stage) => {
      if (controller.signal.aborted) return Promise.reject(controller.signal.reason as Error);
      return heartbeats.beat({ percent, stage });
    },
  };
  let failure: unknown;
  let succeeded = false;
  let returned: TaskCompletion | undefined;
  let settled = false;
  // Race the handler against its signal: a handler that ignores the abort cannot hold the lease past its timeout
  // or a cancel for long. After an abort it gets a bounded grace (still heartbeating, so its execution slot is not
  // handed to another run while it stops); past that, the outcome is written anyway and its later writes fail with
  // LeaseLostError — a handler that ignores its signal for longer can overlap the next run of its route.
  const aborted = new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
  const running = Promise.resolve()
    .then(() => task.run(context))
    .then(
      (value) => {
        succeeded = true;
        if (value) returned = value;
      },
      (error: unknown) => {
        failure = error;
      },
    )
    .finally(() => {
      settled = true;
    });
  try {
    await Promise.race([running, aborted]);
    if ((cause === 'cancel' || cause === 'timeout') && !settled) {
      const graceMs = Math.max(0, Math.min(ABORT_GRACE_MAX_MS, Math.floor(policy.leaseMs / 3), remainingMs() - TIMEOUT_SAFETY_MS));
      await Promise.race([running, delay(graceMs, undefined, { ref: false })]);
    }
  } finally {
    clearTimeout(timeout);
    model?.close();
    await heartbeats.stop();
  }

  // Lost or fenced: another party may own the operation now; this attempt writes nothing more.
  if (cause === 'lease_lost' || cause === 'fenced') return { outcome: 'lease_lost' };
  if (cause === 'cancel') return cancelled(owner, claim);
  if (succeeded && cause === undefined) {
    return completion(async () => {
      const done = await completeOperation(owner, claim, returned);
      return { outcome: 'succeeded', ownerHasDueWork: done.ownerHasDueWork };
    });
  }
  const verdict = cause === 'timeout' ? { kind: 'timeout' as const, message: `timed out after ${timeoutMs} ms` } : classifyFailure(failure);
  const localRouteFailed = route?.name === 'local' && (verdict.kind === 'timeout' || (verdict.kind === 'retryable' && failure instanceof ModelCallError));
  return completion(() => endFailedAttempt(owner, claim, deps, verdict, policy.retry, localRouteFailed && externalAllowed(task, privacyMode, deps.models)));
}
