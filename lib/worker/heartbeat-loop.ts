import { LeaseLostError } from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import type { ClaimedOperation } from '../operations/lease/claim-operation.js';
import { heartbeat, type Progress } from '../operations/lease/heartbeat.js';
import type { OwnerScope } from '../operations/scopes.js';

/** Why a heartbeat stopped the run: the owner asked to cancel, or the lease is gone. */
export type HeartbeatVerdict = 'cancel' | 'lease_lost';

/** A running heartbeat loop (see {@link startHeartbeats}). */
export interface HeartbeatLoop {
  /** One heartbeat now, with progress: the task's `reportProgress`. Rejects as the heartbeat does. */
  beat(progress?: Progress): Promise<void>;
  /** Stops scheduling heartbeats and waits for the one in flight, if any. */
  stop(): Promise<void>;
}

/**
 * Heartbeats `claim`'s lease every `intervalMs` (ms) until stopped (docs/design.md §2, §5): each beat extends the lease
 * on the database clock and reports whether the owner asked to cancel. A cancel seen, or a {@link LeaseLostError}, is
 * passed to `onVerdict` (the run aborts its handler); any other heartbeat failure is logged and the next beat is
 * scheduled as usual — the lease is only lost when the database says so.
 *
 * When a running operation sees its owner's cancel: the cancel only records `cancel_requested_at` on a `running` row.
 * The worker learns of it (a) before the handler starts, at the pre-run recheck (`cancelRequestedUnderLease`); (b) at
 * the next heartbeat of this loop — every `min(HEARTBEAT_SECONDS, lease / 3)`, by default a third of the lease — or a
 * `reportProgress` call, which beats at once; then the handler's `AbortSignal` fires and the attempt ends `cancelled`;
 * (c) at the failure write, whose guarded statement turns any failure into `cancelled` (`failAttempt`). A run that
 * succeeds before (b) keeps its result: the operation is `succeeded`.
 */
export function startHeartbeats(
  owner: OwnerScope,
  claim: ClaimedOperation,
  intervalMs: number,
  logger: Logger,
  onVerdict: (verdict: HeartbeatVerdict) => void,
): HeartbeatLoop {
  const log = { operationId: claim.operationId, taskType: claim.taskType, attempt: claim.attempt };
  const beat = async (progress?: Progress) => {
    try {
      if ((await heartbeat(owner, claim, progress)).cancelRequested) onVerdict('cancel');
    } catch (error) {
      if (error instanceof LeaseLostError) onVerdict('lease_lost');
      throw error;
    }
  };
  let inFlight: Promise<void> = Promise.resolve();
  let stopped = false;
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
    }, intervalMs);
  };
  schedule();
  return {
    beat,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
