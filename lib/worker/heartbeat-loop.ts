import { performance } from 'node:perf_hooks';
import { LeaseLostError } from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { heartbeat, type Progress } from '../operations/lease/heartbeat.js';
import type { OwnerScope } from '../operations/scopes.js';

/**
 * Why the loop stopped the run: the owner asked to cancel; the lease is gone (the database said so); or the worker
 * fenced itself — its local lease deadline passed without a newer acknowledgement, whatever the database answered or
 * failed to answer.
 */
export type HeartbeatVerdict = 'cancel' | 'lease_lost' | 'fenced';

/** A running heartbeat loop (see {@link startHeartbeats}). */
export interface HeartbeatLoop {
  /** One heartbeat now, with progress: the task's `reportProgress`. Rejects as the heartbeat does. */
  beat(progress?: Progress): Promise<void>;
  /**
   * The synchronous fence check (`TaskContext.leaseHeld`): true while the local lease deadline less the margin is
   * ahead; once it has passed, fences at once (as the timer would: `onVerdict('fenced')`) and returns false.
   */
  leaseHeld(): boolean;
  /**
   * Stops scheduling heartbeats and the fence, and waits for the heartbeat in flight, if any — unless the loop fenced
   * itself, when that heartbeat may hang for as long as the partition lasts.
   */
  stop(): Promise<void>;
}

/** When the loop beats and when it fences. Times in **milliseconds**. */
export interface HeartbeatTiming {
  /** Time between heartbeats. */
  readonly intervalMs: number;
  /** How long before the local lease deadline the worker fences itself. Clamped to `[intervalMs, lease − 2 × intervalMs]`. */
  readonly fenceMarginMs: number;
  /** `performance.now()` just before the claim that set the lease was sent (its lease runs `claim.leaseMs` from later). */
  readonly claimSentAt: number;
}

/**
 * Heartbeats `claim`'s lease every `intervalMs` until stopped (docs/design.md §2, §3, §5), and fences the attempt when
 * its lease may have ended. Each beat extends the lease on the database clock and reports whether the owner asked to
 * cancel; a cancel seen, or a {@link LeaseLostError}, is passed to `onVerdict` (the run aborts its handler). Any other
 * heartbeat failure is logged and the next beat is scheduled as usual.
 *
 * **Self-fencing.** The worker keeps a local lease deadline on the monotonic clock (`performance.now()`): the moment the
 * last acknowledged heartbeat (or the claim) was *sent*, plus the lease time the database reported left after it
 * (`leaseRemainingMs`; for the claim, its `leaseMs`). The database extended the lease after that moment, so the lease
 * ends no earlier than the local deadline. `fenceMarginMs` before it, if no newer acknowledgement arrived, the loop
 * calls `onVerdict('fenced')`: the handler's `AbortSignal` fires and the attempt writes nothing — whether heartbeats
 * failed, hung (a cut connection), or never got an answer. A timer does that; since a paused process runs its timers
 * late (a task's own timer may fire first), `leaseHeld()` makes the same check synchronously, and every external call
 * asks it first: the model session does, and a task's own calls should (`TaskContext.leaseHeld`).
 * ```
 *  worker  ──send hb──────────ack(left = L)─────── send hb ······ (no answer: the connection is cut) ·······
 *            t0                                      t1
 *  local     |<──────────── L − margin ─────────────>| fence: abort, write nothing
 *  database   lease end ≥ t0 + L ─────────────────────────────────┤ sweeper expires it → attempt 2 claims
 * ```
 * Clock assumption: the worker's monotonic clock and the database clock advance at the same rate, to within the margin
 * over one lease (NTP-disciplined hosts drift by parts per million); their offsets do not matter, since only elapsed
 * time is compared.
 *
 * When a running operation sees its owner's cancel: the cancel only records `cancel_requested_at` on a `running` row.
 * The worker learns of it (a) before the handler starts, at the pre-run recheck (`cancelRequestedUnderLease`); (b) at
 * the next heartbeat of this loop — every `min(HEARTBEAT_SECONDS, lease / 4)`, by default a quarter of the lease — or a
 * `reportProgress` call, which beats at once; then the handler's `AbortSignal` fires and the attempt ends `cancelled`;
 * (c) at the failure write, whose guarded statement turns any failure into `cancelled` (`failAttempt`). A run that
 * succeeds before (b) keeps its result: the operation is `succeeded`.
 */
export function startHeartbeats(
  owner: OwnerScope,
  claim: ClaimedOperation,
  timing: HeartbeatTiming,
  logger: Logger,
  onVerdict: (verdict: HeartbeatVerdict) => void,
): HeartbeatLoop {
  const log = { operationId: claim.operationId, taskType: claim.taskType, attempt: claim.attempt };
  // The margin must leave room for two beats inside the lease, or a healthy attempt would fence itself.
  const margin = Math.max(timing.intervalMs, Math.min(timing.fenceMarginMs, claim.leaseMs - 2 * timing.intervalMs));
  let fenceAt = timing.claimSentAt + claim.leaseMs - margin;
  let fenced = false;
  let stopped = false;
  let fenceTimer: NodeJS.Timeout | undefined;
  const fence = () => {
    fenced = true;
    clearTimeout(fenceTimer);
    logger.warn('lease fenced: no heartbeat acknowledged before the local lease deadline; aborting the attempt', log);
    onVerdict('fenced');
  };
  // False for good once the lease is lost (the database said so), the loop fenced, or the loop stopped: a handler
  // still running after its attempt ended must not call out.
  let lost = false;
  const leaseHeld = () => {
    if (!fenced && !stopped && !lost && performance.now() >= fenceAt) fence();
    return !fenced && !stopped && !lost;
  };
  const armFence = () => {
    clearTimeout(fenceTimer);
    if (stopped || fenced) return;
    fenceTimer = setTimeout(() => {
      if (stopped || fenced) return;
      if (performance.now() < fenceAt) return armFence();
      fence();
    }, Math.max(0, fenceAt - performance.now()));
  };
  const beat = async (progress?: Progress) => {
    const sentAt = performance.now();
    try {
      const ack = await heartbeat(owner, claim, progress);
      if (!fenced) {
        // Never more than this attempt's own lease length, whatever the row says (a lease set by another release).
        fenceAt = Math.max(fenceAt, sentAt + Math.min(ack.leaseRemainingMs, claim.leaseMs) - margin);
        armFence();
      }
      if (ack.cancelRequested) onVerdict('cancel');
    } catch (error) {
      if (error instanceof LeaseLostError) {
        lost = true;
        onVerdict('lease_lost');
      }
      throw error;
    }
  };
  let inFlight: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      inFlight = beat()
        .catch((error) => {
          if (!(error instanceof LeaseLostError)) logger.warn('heartbeat failed', { ...log, ...describeError(error) });
        })
        .finally(() => {
          if (!stopped) schedule();
        });
    }, timing.intervalMs);
  };
  armFence();
  schedule();
  return {
    beat,
    leaseHeld,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(fenceTimer);
      if (!fenced) await inFlight;
    },
  };
}
