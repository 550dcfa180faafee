import { databaseNow } from '../../db/database-clock.js';
import type { DbContext } from '../../db/database.js';
import { parseDbTime } from '../../db/db-time.js';
import { ValidationError } from '../../errors.js';
import { SQS_MAX_DELAY_SECONDS } from '../../queue/wakeup-sender.js';
import type { TaskDefinition } from '../../tasks/task-definition.js';
import type { QueuedTimes } from '../lifecycle/lifecycle.repository.js';

/**
 * Delayed operations (docs/design.md §4, delayed operations): an admission may ask that its operation start no earlier
 * than `delaySeconds` from now or than `runAt`, when its task type opts in (`TaskDefinition.delay`). The row is
 * `queued` from the start, with `available_at` at the asked time on the **database clock** — no claim takes a row
 * before its `available_at`, and its owner's turn is not read before it either — and its queued deadline counted from
 * then. The wake-up: an SQS message delayed by the delay when SQS can (at most 900 s), the sweeper's due wake-up
 * re-send beyond (its `wake_at` is then the `available_at` itself, so the first sweep after it is due sends it).
 */

/**
 * The delay an admission asked for, as validated against its task type: none; `delaySeconds`; or `runAt` as epoch ms
 * (sub-millisecond digits rounded up, so never earlier than asked) and as ISO-8601 UTC (what its request hash binds).
 * `maxSeconds` is the task type's `delay.maxSeconds`.
 */
export type RequestedDelay =
  | { readonly kind: 'none' }
  | { readonly kind: 'seconds'; readonly seconds: number; readonly maxSeconds: number }
  | { readonly kind: 'at'; readonly epochMs: number; readonly iso: string; readonly maxSeconds: number };

const NO_DELAY: RequestedDelay = { kind: 'none' };

function refused(path: string, message: string): ValidationError {
  return new ValidationError('Invalid body.', [{ path, message }]);
}

/**
 * The request's `delaySeconds` / `runAt`, checked against the task type (no database read: `runAt`'s bound is checked
 * by {@link delayMsOf}, against the database clock).
 * @param request the body's fields, already of the right form (`AdmitRequestSchema`: an integer 0 to 30 days; an RFC
 * 3339 time with an offset).
 * @throws {ValidationError} (HTTP 400) naming the field (`body.delaySeconds`, `body.runAt`): the task type accepts no
 * delay; both were given; `delaySeconds` is above the task type's `delay.maxSeconds`.
 */
export function parseRequestedDelay(task: TaskDefinition, request: { readonly delaySeconds?: number | undefined; readonly runAt?: string | undefined }): RequestedDelay {
  const { delaySeconds, runAt } = request;
  if (delaySeconds === undefined && runAt === undefined) return NO_DELAY;
  const allowed = task.delay;
  if (!allowed) throw refused(delaySeconds !== undefined ? 'body.delaySeconds' : 'body.runAt', `is not accepted for ${task.type}`);
  if (delaySeconds !== undefined && runAt !== undefined) throw refused('body.runAt', 'must not be given together with delaySeconds');
  if (delaySeconds !== undefined) {
    if (delaySeconds > allowed.maxSeconds) throw refused('body.delaySeconds', `must be at most ${allowed.maxSeconds} for ${task.type}`);
    return { kind: 'seconds', seconds: delaySeconds, maxSeconds: allowed.maxSeconds };
  }
  const epochMs = runAtEpochMs(runAt as string);
  return { kind: 'at', epochMs, iso: new Date(epochMs).toISOString(), maxSeconds: allowed.maxSeconds };
}

/**
 * `runAt` (RFC 3339, `Z` or an offset) as epoch milliseconds, rounded **up** when it has digits below the millisecond.
 * @throws {ValidationError} when the time cannot be read (not reached after `AdmitRequestSchema`).
 */
function runAtEpochMs(runAt: string): number {
  const ms = Date.parse(runAt);
  if (!Number.isFinite(ms)) throw refused('body.runAt', 'must be an RFC 3339 date-time with an offset');
  const fraction = /T\d{2}:\d{2}:\d{2}\.(\d+)/.exec(runAt)?.[1] ?? '';
  return /[1-9]/.test(fraction.slice(3)) ? ms + 1 : ms;
}

/** The parts of a {@link RequestedDelay} its request hash binds: what the request gave, as validated. */
export function hashedDelay(delay: RequestedDelay): { delaySeconds?: number; runAt?: string } {
  if (delay.kind === 'seconds') return { delaySeconds: delay.seconds };
  if (delay.kind === 'at') return { runAt: delay.iso };
  return {};
}

/**
 * How long after the database clock's now the operation becomes claimable, in **ms**: `delaySeconds` × 1000, or for
 * `runAt` its distance from the database clock's now (one read, `databaseNow`; a time already past is 0: it starts at
 * once). The read comes before the insert, so the row's `available_at` (now + this, in the insert) is later than
 * `runAt` by the time between them, never earlier.
 * @throws {ValidationError} (HTTP 400, `body.runAt`) when `runAt` is more than the task type's `delay.maxSeconds` ahead.
 */
export async function delayMsOf(ctx: DbContext, delay: RequestedDelay): Promise<number> {
  if (delay.kind === 'none') return 0;
  if (delay.kind === 'seconds') return delay.seconds * 1000;
  const delayMs = Math.max(0, delay.epochMs - parseDbTime(await databaseNow(ctx)).getTime());
  if (delayMs > delay.maxSeconds * 1000) throw refused('body.runAt', `must be at most ${delay.maxSeconds} seconds from now`);
  return delayMs;
}

/** A new operation's {@link QueuedTimes}, and the SQS delay of its admission wake-up. */
export interface AdmissionSchedule extends QueuedTimes {
  /**
   * `DelaySeconds` of the wake-up sent after the commit, in **seconds** (0 for an operation claimable at once), or
   * undefined when none is sent then: a delay beyond SQS's 900 s is left to the sweeper's due wake-up.
   */
  readonly hintDelaySeconds: number | undefined;
}

/**
 * When a new operation becomes claimable, fails its queued deadline and is due its sweeper wake-up, and how it is
 * woken, all from `delayMs` (ms; 0 = at once):
 *
 * - `available_at` = now + delay; `deadline_at` = `available_at` + `deadlineMs` (the queued deadline counts from the
 *   time it becomes claimable);
 * - delay ≤ 900 s (rounded up to whole seconds): a wake-up with `DelaySeconds` = that, and `wake_at` =
 *   `available_at` + `wakeupResendMs` — the sweeper re-sends only if that message was lost;
 * - delay > 900 s: no wake-up at admission, and `wake_at` = `available_at`, so the sweeper's due wake-up pass (database
 *   clock, `wake_at <= now`) sends it at the first sweep after it is due — within one sweep interval.
 */
export function admissionSchedule(delayMs: number, deadlineMs: number, wakeupResendMs: number): AdmissionSchedule {
  const delaySeconds = Math.ceil(delayMs / 1000);
  const viaSqs = delaySeconds <= SQS_MAX_DELAY_SECONDS;
  return {
    availableInMs: delayMs,
    deadlineInMs: delayMs + deadlineMs,
    wakeInMs: viaSqs ? delayMs + wakeupResendMs : delayMs,
    hintDelaySeconds: viaSqs ? delaySeconds : undefined,
  };
}
