import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { LeaseLostError, ValidationError } from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import { recordLifecycle } from '../observability/lifecycle-events.js';
import type { OpsMetrics } from '../observability/metrics.js';
import { retryDelayMs } from '../operations/lifecycle/backoff.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { acknowledgeCancel, cancelRequestedUnderLease, completeOperation, failOperation, fallBackToExternal, heartbeat, type FailureKind } from '../operations/lease/lease-operations.js';
import { sendWakeup } from '../queue/send-wakeup.js';
import { taskPolicy, type OperationPolicy } from '../operations/operation-policy.js';
import type { OwnerScope } from '../operations/scopes.js';
import { isEntitled, loadOwnerSettings } from '../owners/owner-settings.js';
import { stricterPrivacy } from '../owners/privacy-mode.js';
import type { WakeupSender } from '../queue/wakeup-sender.js';
import type { ResultObjects } from '../results/result-objects.js';
import { PermanentTaskError, SubjectNotFoundError, type TaskCompletion, type TaskContext } from '../tasks/task-definition.js';
import type { BreakerPermit } from '../ai/circuit-breaker.js';
import type { ModelRoutes } from '../ai/model-routes.js';
import { openModelSession } from '../ai/model-session.js';
import { externalAllowed } from '../ai/route-permits.js';
import { ModelCallError } from '../models/model-errors.js';
import type { TaskRegistry } from '../tasks/task-registry.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { attemptEvent, type AttemptEnd } from './attempt-end.js';

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
  /** The model routes of model tasks (DESIGN §5). @default none: a model task's run fails retryably */
  readonly models?: ModelRoutes;
}

/** How one run ended. `lease_lost` means another party owns the operation now and nothing was written. */
export type RunOutcome = 'succeeded' | 'waiting_for_retry' | 'waiting_for_external_fallback' | 'failed' | 'cancelled' | 'lease_lost';

/** Milliseconds kept back from the Lambda's remaining time for the final write. */
export const TIMEOUT_SAFETY_MS = 5_000;

/** Longest wait, in ms, for an aborted handler to return before its outcome is written (also at most a third of the lease). */
export const ABORT_GRACE_MAX_MS = 10_000;

type AbortCause = 'cancel' | 'lease_lost' | 'timeout';

/**
 * Runs one claimed operation in its owner scope (DESIGN §5): rechecks cancellation and entitlement, runs the task handler with an
 * `AbortSignal`, heartbeats the lease every `heartbeatMs` (at most a third of the lease; a heartbeat that reports a cancel request aborts the
 * handler), enforces `min(task timeout, remaining time − 5 s)`, classifies the result and commits the terminal state
 * (or the retry) under the lease.
 *
 * ```
 *  claim ── heartbeat ── run ─┬─ ok ─────────────── complete            → succeeded (+ notification)
 *                             ├─ cancel seen ─────── acknowledge-cancel  → cancelled (+ notification)
 *                             ├─ timeout / error ─── fail                → waiting_for_retry | failed
 *                             ├─ local model failed, external allowed ──→ waiting_for_external_fallback
 *                             └─ lease lost ──────── (write nothing: the sweeper or another worker owns it)
 * ```
 * A model task (DESIGN §5) gets `context.model` on the route its claim chose — local, or external on a claim from
 * `waiting_for_external_fallback` — which records provenance and feeds the route's breaker. Its retryable failures
 * (timeout, 5xx, connection) on the local route fall back to the external route when {@link externalAllowed} and an
 * attempt is left; invalid output ends as `invalid_model_output`, a refused request as `model_rejected`.
 *
 * How the attempt ended is recorded once, after its write committed (`attemptEvent`: one log line with the operation
 * id, its metric with the task type).
 * @param remainingMs the invocation's remaining time in ms (Lambda `context.getRemainingTimeInMillis`).
 * @param modelPermit the breaker permit the claimer took for the run's model route. @default a plain permit
 * @throws database errors other than a lost lease (the SQS message is then retried; the lease will expire).
 */
export async function runClaimedOperation(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  remainingMs: () => number,
  modelPermit: BreakerPermit = { trial: false },
): Promise<RunOutcome> {
  const started = performance.now();
  let end: AttemptEnd;
  try {
    end = await runAttempt(owner, claim, deps, remainingMs, modelPermit);
  } catch (error) {
    if (!(error instanceof LeaseLostError)) throw error;
    end = { outcome: 'lease_lost' };
  }
  recordLifecycle(deps, attemptEvent(claim, end, Math.round(performance.now() - started)));
  return end.outcome;
}

async function runAttempt(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  remainingMs: () => number,
  modelPermit: BreakerPermit,
): Promise<AttemptEnd> {
  const log = { operationId: claim.operationId, taskType: claim.taskType, attempt: claim.attempt };
  const task = deps.registry.get(claim.taskType);
  const policy = taskPolicy(task, deps.policy);
  // Cancellation is rechecked before the run with one read (no heartbeat write: the claim has just set the lease); a
  // cancel requested after this is seen at the next heartbeat, as during any run.
  if (await cancelRequestedUnderLease(owner, claim)) {
    await acknowledgeCancel(owner, claim);
    return { outcome: 'cancelled' };
  }
  // Entitlement is rechecked live before every run and fails closed (DESIGN §4, §5). So is privacy: routing follows
  // the stricter of the snapshot taken at admission and the owner's current mode, so withdrawing consent
  // (`local_only`) stops any further external call, and granting it later never widens an admitted operation. A task
  // type with neither an entitlement nor a model reads no settings.
  let privacyMode = claim.privacyMode;
  if (task.entitlement !== undefined || task.model !== undefined) {
    const settings = await loadOwnerSettings(owner.store, owner.ownerUserId);
    if (!isEntitled(task, settings)) {
      return await fail(owner, claim, deps, 'entitlement_revoked', 'the owner is no longer entitled to this task type', policy.retry);
    }
    privacyMode = stricterPrivacy(claim.privacyMode, settings.privacyMode);
  }
  let params: unknown;
  try {
    params = parseOrThrow(task.paramsSchema, JSON.parse(claim.paramsJson), 'params');
  } catch (error) {
    return await fail(owner, claim, deps, 'permanent', `stored params no longer valid: ${describeError(error).errorMessage}`, policy.retry);
  }

  const controller = new AbortController();
  let cause: AbortCause | undefined;
  const abort = (why: AbortCause) => {
    if (cause) return;
    cause = why;
    controller.abort(new Error(`aborted: ${why}`));
  };
  const beat = async (progress?: { percent: number; stage?: string | undefined }) => {
    try {
      if ((await heartbeat(owner, claim, progress)).cancelRequested) abort('cancel');
    } catch (error) {
      if (error instanceof LeaseLostError) abort('lease_lost');
      throw error;
    }
  };
  const timeoutMs = Math.max(1, Math.min(policy.timeoutMs, remainingMs() - TIMEOUT_SAFETY_MS));
  const timesOutAt = performance.now() + timeoutMs;
  const route = task.model ? (claim.claimedFrom === 'waiting_for_external_fallback' ? deps.models?.external : deps.models?.local) : undefined;
  if (task.model && (!route || (route.name === 'external' && !externalAllowed(task, privacyMode, deps.models)))) {
    // Fail closed: the route is not configured here, or the operation may no longer leave the local route.
    if (route) route.breaker.release(modelPermit);
    return await fail(owner, claim, deps, 'retryable', `model route ${route?.name ?? 'local'} is not available to this operation`, policy.retry);
  }
  const model = route
    ? openModelSession({
        route,
        permit: modelPermit,
        owner,
        claim,
        signal: controller.signal,
        taskTimeLeftMs: () => timesOutAt - performance.now(),
        requestTimeoutMs: deps.models?.requestTimeoutMs ?? timeoutMs,
        ...(task.model?.inferencesPerAttempt ? { inferencesPerAttempt: task.model.inferencesPerAttempt } : {}),
      })
    : undefined;
  const timeout = setTimeout(() => abort('timeout'), timeoutMs);
  // A task type may lease for less than the process-wide heartbeat; beat at least three times per lease.
  const heartbeatMs = Math.min(deps.policy.heartbeatMs, Math.floor(policy.leaseMs / 3));
  let beating: Promise<void> = Promise.resolve();
  let stopped = false;
  let beatTimer: NodeJS.Timeout | undefined;
  const scheduleBeat = () => {
    beatTimer = setTimeout(() => {
      beating = beat()
        .catch((error) => {
          if (!(error instanceof LeaseLostError)) deps.logger.warn('heartbeat failed', { ...log, ...describeError(error) });
        })
        .finally(() => {
          if (!stopped) scheduleBeat();
        });
    }, heartbeatMs);
  };
  scheduleBeat();

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
    reportProgress: (percent, stage) => {
      if (controller.signal.aborted) return Promise.reject(controller.signal.reason as Error);
      return beat({ percent, stage });
    },
  };
  let failure: unknown;
  let succeeded = false;
  let completion: TaskCompletion | undefined;
  let settled = false;
  // Race the handler against its signal: a handler that ignores the abort cannot hold the lease past its timeout
  // or a cancel for long. After an abort it gets a bounded grace (still heartbeating, so its execution slot is not
  // handed to another run while it stops); past that, the outcome is written anyway and its later writes fail with
  // LeaseLostError — a handler that ignores its signal for longer can overlap the next run of its route.
  const aborted = new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
  const running = Promise.resolve()
    .then(() => task.run(context))
    .then(
      (returned) => {
        succeeded = true;
        if (returned) completion = returned;
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
    if (cause !== undefined && cause !== 'lease_lost' && !settled) {
      const graceMs = Math.max(0, Math.min(ABORT_GRACE_MAX_MS, Math.floor(policy.leaseMs / 3), remainingMs() - TIMEOUT_SAFETY_MS));
      await Promise.race([running, delay(graceMs, undefined, { ref: false })]);
    }
  } finally {
    stopped = true;
    clearTimeout(timeout);
    clearTimeout(beatTimer);
    model?.close();
    await beating;
  }

  if (cause === 'lease_lost') return { outcome: 'lease_lost' };
  if (cause === 'cancel') {
    await acknowledgeCancel(owner, claim);
    return { outcome: 'cancelled' };
  }
  if (succeeded && cause === undefined) {
    await completeOperation(owner, claim, completion);
    return { outcome: 'succeeded' };
  }
  const verdict = cause === 'timeout' ? { kind: 'timeout' as const, message: `timed out after ${timeoutMs} ms` } : classifyFailure(failure);
  const localRouteFailed =
    route?.name === 'local' && (verdict.kind === 'timeout' || (verdict.kind === 'retryable' && failure instanceof ModelCallError));
  if (localRouteFailed && claim.attempt < claim.maxAttempts && externalAllowed(task, privacyMode, deps.models)) {
    const status = await fallBackToExternal(owner, claim, `local route: ${verdict.message}`, deps.policy.wakeupResendMs);
    if (status === 'cancelled') return { outcome: 'cancelled' };
    await sendWakeup(deps, { v: 1, reason: 'retry', operationId: claim.operationId });
    return { outcome: status, failureKind: verdict.kind === 'timeout' ? 'timeout' : 'retryable' };
  }
  return await fail(owner, claim, deps, verdict.kind, verdict.message, policy.retry);
}

/**
 * The failure kind and operator message of a failed run (DESIGN §5 classification): model failures by their bounded
 * code (timeout, 5xx, 429, connection: retryable; invalid output, 4xx, oversize: permanent), typed task errors by class,
 * anything else retryable.
 */
function classifyFailure(failure: unknown): { kind: FailureKind; message: string } {
  if (failure instanceof ModelCallError) {
    // Operator-only text: the fixed message plus the bounded provider code (ECONNREFUSED, an SDK error name), if any.
    const message = failure.providerCode ? `${failure.message} (${failure.providerCode})` : failure.message;
    if (failure.failure === 'invalid_output') return { kind: 'invalid_model_output', message };
    if (failure.failure === 'timeout') return { kind: 'timeout', message };
    return { kind: failure.retryable || failure.failure === 'aborted' ? 'retryable' : 'model_rejected', message };
  }
  const message = describeError(failure).errorMessage as string;
  if (failure instanceof SubjectNotFoundError) return { kind: 'subject_not_found', message };
  if (failure instanceof ValidationError || failure instanceof PermanentTaskError) return { kind: 'permanent', message };
  return { kind: 'retryable', message };
}

async function fail(
  owner: OwnerScope,
  claim: ClaimedOperation,
  deps: RunDeps,
  kind: FailureKind,
  message: string,
  retry: { baseDelayMs: number; maxDelayMs: number },
): Promise<AttemptEnd> {
  const delayMs = retryDelayMs(claim.attempt, retry, deps.random);
  const delaySeconds = Math.ceil(delayMs / 1000);
  const viaSqsDelay = delaySeconds <= 900;
  const wakeAfterMs = viaSqsDelay ? delayMs + deps.policy.wakeupResendMs : delayMs;
  const outcome = await failOperation(owner, claim, { kind, message }, delayMs, wakeAfterMs);
  if (outcome.status === 'failed') return { outcome: 'failed', failureCode: outcome.failureCode };
  if (outcome.status === 'cancelled') return { outcome: 'cancelled' };
  if (viaSqsDelay) await sendWakeup(deps, { v: 1, reason: 'retry', operationId: claim.operationId }, delaySeconds);
  return { outcome: 'waiting_for_retry', failureKind: kind === 'timeout' ? 'timeout' : 'retryable', retryInMs: outcome.retryInMs };
}
