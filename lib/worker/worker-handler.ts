import { performance } from 'node:perf_hooks';
import middy from '@middy/core';
import sqsPartialBatchFailure from '@middy/sqs-partial-batch-failure';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Store } from '../db/store.js';
import { DatabaseUnavailableError } from '../errors.js';
import { describeError } from '../logger.js';
import { recordLifecycle } from '../observability/lifecycle-events.js';
import type { Observability } from '../observability/observability.js';
import { sendWakeup } from '../queue/send-wakeup.js';
import { claimNextOperation, enterOwnerScope, type ClaimDeps, type ClaimedOperation } from '../operations/lease/claim-operation.js';
import { acquireRoutePermits, claimableRoutes, releaseRoutePermits } from '../ai/route-permits.js';
import { WorkerScope } from '../operations/scopes.js';
import { parseWakeupMessage, type WakeupMessage } from '../queue/wakeup-message.js';
import type { AttemptEnd } from './attempt-end.js';
import { runClaimedAttempt, type RunDeps, type RunOutcome } from './run-claimed-operation.js';
import { hasDueOperation } from '../operations/store/operation.repository.js';
import { SpanKind, trace } from '@opentelemetry/api';
import { inSpan, SpanAttr, type InSpanOptions } from '../tracing/spans.js';
import { traceContextOfRecord } from '../tracing/sqs-trace-context.js';

/** Delay of the hint a failed claim sends in place of its spent message, in **seconds** (SQS `DelaySeconds`). */
export const CLAIM_FAILED_RESEND_SECONDS = 5;

/** What the SQS worker needs. */
export interface WorkerDeps extends RunDeps, Omit<ClaimDeps, 'metrics'> {
  readonly store: Store;
}

/**
 * Handles one wake-up: claims the best eligible operation among the registered task types (the message names an
 * operation only as a hint; docs/design.md §1) and runs it. `idle` when nothing was eligible — the message is then simply
 * consumed: a lost or duplicate wake-up never loses or duplicates work. A claim is recorded as `operation_claimed`
 * (`OperationClaimed`, with `route` for model tasks); how the attempt ended is recorded by `runClaimedOperation`.
 *
 * Start latency: every way a wake-up can be spent without its claim is covered by another wake-up. A claim that
 * throws sends one replacement, due {@link CLAIM_FAILED_RESEND_SECONDS} later (its own message returns only after the
 * visibility timeout; a replacement that fails in turn sends none); an operation whose route
 * is full waits for the `capacity_freed` hint its route's next run end sends; an operation whose model route's breaker
 * is open waits for the sweeper's re-send (the breaker's cool-down); an operation whose owner is at its running limit
 * waits for the `capacity_freed` hint that each of that owner's runs sends when it ends while the owner has due work
 * (`hasDueOperation`); a claim that found the row locked by another
 * claimer leaves it to that claimer. A lost message is re-sent by the sweeper once the row's `wake_at` passes
 * (`WAKEUP_RESEND_SECONDS` after admission), so on an idle stack an operation starts within one wake-up round trip
 * (plus 5 s per failed claim), and at worst within `WAKEUP_RESEND_SECONDS` + one sweep interval
 * (`SWEEP_INTERVAL_SECONDS`) when its message is lost.
 * @param message the wake-up being handled, if any: a failed claim replaces only a message that names an operation.
 * @throws database errors (the message is reported as a batch item failure and redelivered).
 */
export async function processWakeup(deps: WorkerDeps, remainingMs: () => number, message?: WakeupMessage): Promise<RunOutcome | 'idle'> {
  const worker = new WorkerScope(deps.store);
  // Model routes whose breaker is open are not claimed for: their operations wait, attempts unspent (docs/design.md §5).
  const permits = acquireRoutePermits(deps.models);
  let claim: ClaimedOperation | null;
  const claimSentAt = performance.now();
  try {
    claim = await claimSpan(() => claimNextOperation(worker, deps, claimableRoutes(permits)));
  } catch (error) {
    releaseRoutePermits(deps.models, permits);
    // This message is spent (it comes back only after the visibility timeout): a new hint, so the work it may have
    // named starts seconds later, not minutes. Delayed, and only for a message that names an operation — the
    // replacement names none, so a claim that keeps failing (the database down, a bad deploy) makes one replacement
    // per original message, never a chain; the originals still go the usual way to the dead-letter queue.
    if (!message || message.operationId !== undefined) await sendWakeup(deps, { v: 1, reason: 'retry' }, CLAIM_FAILED_RESEND_SECONDS);
    throw error;
  }
  const route = claim && deps.registry.get(claim.taskType).model ? (claim.claimedFrom === 'waiting_for_external_fallback' ? 'external' : 'local') : undefined;
  releaseRoutePermits(deps.models, permits, route);
  if (!claim) {
    deps.logger.debug('wake-up found nothing claimable; message consumed', { reason: message?.reason, hintOperationId: message?.operationId });
    return 'idle';
  }
  recordLifecycle(deps, { event: 'operation_claimed', operationId: claim.operationId, taskType: claim.taskType, attempt: claim.attempt, ...(route ? { route } : {}) });
  const permit = (route && permits[route]) || undefined;
  let end: AttemptEnd;
  try {
    end = await runClaimedAttempt(enterOwnerScope(worker, claim), claim, deps, remainingMs, permit, claimSentAt, true);
  } finally {
    // A run that ended before its model call (cancel seen, entitlement revoked, a database error) must not keep a
    // half-open breaker's only trial: give it back. After a call reported its outcome this changes nothing.
    releaseRoutePermits(deps.models, permits);
  }
  // The run freed its owner's running slot, and on a limited route a route slot: when something may wait on them —
  // the route is limited, or the owner has due work (its wake-ups may have been consumed while it was at its limit) —
  // wake a worker for it, instead of leaving it to the sweeper's next re-send.
  const capacityRoute = deps.registry.get(claim.taskType).capacityRoute;
  const routeLimited = capacityRoute !== undefined && deps.capacity.routeLimit(capacityRoute) !== undefined;
  if (routeLimited || (await ownerHasDueWork(deps, claim, end))) await sendWakeup(deps, { v: 1, reason: 'capacity_freed', operationId: claim.operationId });
  return end.outcome;
}

/**
 * Runs a claim inside a `claim` span, which names what it claimed (operation id, task type, attempt) — on the
 * wake-up's span too, since the claimed operation may not be the one the message names — or `durable_ops.outcome: idle`.
 */
async function claimSpan(claim: () => Promise<ClaimedOperation | null>): Promise<ClaimedOperation | null> {
  const wakeupSpan = trace.getActiveSpan();
  return inSpan('claim', {}, async (span) => {
    const claimed = await claim();
    if (!claimed) {
      span.setAttribute(SpanAttr.outcome, 'idle');
      return claimed;
    }
    const attributes = { [SpanAttr.operationId]: claimed.operationId, [SpanAttr.taskType]: claimed.taskType, [SpanAttr.attempt]: claimed.attempt };
    span.setAttributes(attributes);
    wakeupSpan?.setAttributes(attributes);
    return claimed;
  });
}

/**
 * Whether the claim's owner has a due operation of its task type: what the completion saw, when it looked (MariaDB's
 * `complete_operations_v2` answers it in the same round trip), else one probe (`hasDueOperation`). Best effort: the
 * run's outcome is already written, so a failed probe (the database unreachable) is logged and answered true — one
 * hint too many is harmless, one too few would leave the work to the sweeper's re-send.
 */
async function ownerHasDueWork(deps: WorkerDeps, claim: ClaimedOperation, end: AttemptEnd): Promise<boolean> {
  if (end.outcome === 'succeeded' && end.ownerHasDueWork !== undefined) return end.ownerHasDueWork;
  try {
    return await hasDueOperation(deps.store, claim.taskType, claim.ownerUserId, deps.store.caps.skipLocked);
  } catch (error) {
    deps.logger.warn('could not check for the owner\'s waiting work after a run; sending a wake-up anyway', { operationId: claim.operationId, ...describeError(error) });
    return true;
  }
}

/**
 * The CONSUMER span of one SQS record, `wakeup process`: the child of the `wakeup publish` span whose context the record
 * carries in its `traceparent` message attribute (a trace's root when it carries none).
 */
function consumerSpanOptions(record: SQSRecord): InSpanOptions {
  return {
    kind: SpanKind.CONSUMER,
    parent: traceContextOfRecord(record),
    attributes: { [SpanAttr.messagingSystem]: 'aws_sqs', [SpanAttr.messagingOperationType]: 'process' },
  };
}

/**
 * The SQS-triggered worker Lambda (docs/design.md §5): each record of the batch is parsed (zod) and handled concurrently;
 * a record whose handling threw (already logged here, so the middleware logs nothing — a database outage,
 * `DatabaseUnavailableError`, at `warn` with its code, anything else at `error`) is reported in `batchItemFailures` (partial batch response; the event source mapping
 * needs `ReportBatchItemFailures`), so only it is redelivered — and after `maxReceiveCount`, dead-lettered. Each record is
 * handled inside its CONSUMER span (`consumerSpanOptions`), parented on the trace its `traceparent` attribute carries.
 * @param deps the runtime, or a function resolving it on first invocation (Lambda cold start).
 * @param observability when given, its middlewares come first: Lambda context on every log line, the invocation's
 * metrics published when it ends. @default none (tests)
 */
export function createWorkerHandler(deps: WorkerDeps | (() => Promise<WorkerDeps>), observability?: Observability) {
  const resolve = typeof deps === 'function' ? deps : async () => deps;
  const handle = async (event: SQSEvent, context: Context): Promise<PromiseSettledResult<unknown>[]> => {
    const runtime = await resolve();
    const remainingMs = () => context.getRemainingTimeInMillis();
    return Promise.allSettled(
      event.Records.map((record: SQSRecord) => inSpan('wakeup process', consumerSpanOptions(record), async (span) => {
        try {
          const message = parseWakeupMessage(record.body);
          span.setAttributes({ [SpanAttr.wakeupReason]: message.reason, ...(message.operationId ? { [SpanAttr.wakeupOperationId]: message.operationId } : {}) });
          runtime.logger.debug('wake-up received', { messageId: record.messageId, reason: message.reason, hintOperationId: message.operationId });
          const outcome = await processWakeup(runtime, remainingMs, message);
          span.setAttribute(SpanAttr.outcome, outcome);
          return outcome;
        } catch (error) {
          // An outage is not a bug: one WARN with the driver's code, no stack; the record is a batch item failure either way.
          if (error instanceof DatabaseUnavailableError) {
            runtime.logger.warn('wake-up failed: the database is unavailable; SQS will redeliver it', { messageId: record.messageId, code: error.code, reason: error.reason });
          } else runtime.logger.error('wake-up failed; SQS will redeliver it', { messageId: record.messageId, ...describeError(error) });
          throw error;
        }
      })),
    );
  };
  return middy<SQSEvent, SQSBatchResponse>()
    .use([...(observability?.middlewares ?? [])])
    .use(sqsPartialBatchFailure({ logger: () => undefined }))
    .handler(handle as unknown as (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>);
}
