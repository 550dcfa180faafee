import type { Config } from '../config.js';
import type { RetryPolicy, TaskDefinition } from '../tasks/task-definition.js';

/** Process-wide operation defaults, from {@link Config}. Durations in **milliseconds**. */
export interface OperationPolicy {
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  readonly maxAttempts: number;
  readonly retry: RetryPolicy;
  /** How long an admitted or retried operation may wait to start. */
  readonly deadlineMs: number;
  /** How long after a wake-up the sweeper re-sends one for a row still unclaimed. */
  readonly wakeupResendMs: number;
  /** Owner retries allowed per operation. */
  readonly maxManualRetries: number;
  /** Terminal rows older than this are purged (and their idempotency keys forgotten). */
  readonly retentionMs: number;
  /**
   * How long before its local lease deadline a worker fences itself (aborts the attempt, writes nothing) when no
   * heartbeat was acknowledged since; see `startHeartbeats`. @default the attempt's heartbeat interval
   */
  readonly fenceMarginMs?: number | undefined;
}

/** The {@link OperationPolicy} a configuration describes. */
export function policyFromConfig(config: Config): OperationPolicy {
  return Object.freeze({
    leaseMs: config.LEASE_SECONDS * 1000,
    heartbeatMs: config.HEARTBEAT_SECONDS * 1000,
    maxAttempts: config.MAX_ATTEMPTS,
    retry: Object.freeze({ baseDelayMs: config.RETRY_BASE_SECONDS * 1000, maxDelayMs: config.RETRY_MAX_SECONDS * 1000 }),
    deadlineMs: config.QUEUED_DEADLINE_SECONDS * 1000,
    wakeupResendMs: config.WAKEUP_RESEND_SECONDS * 1000,
    maxManualRetries: config.MAX_MANUAL_RETRIES,
    retentionMs: config.RETENTION_DAYS * 86_400_000,
    fenceMarginMs: config.LEASE_FENCE_MARGIN_SECONDS === undefined ? undefined : config.LEASE_FENCE_MARGIN_SECONDS * 1000,
  });
}

/** The policy one task type runs under: its own settings where it has them, the process defaults elsewhere. */
export interface TaskPolicy {
  readonly priority: number;
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly deadlineMs: number;
}

/** Merges a task definition over the process defaults. */
export function taskPolicy(task: TaskDefinition, policy: OperationPolicy): TaskPolicy {
  return {
    priority: task.priority ?? 0,
    maxAttempts: task.maxAttempts ?? policy.maxAttempts,
    leaseMs: task.leaseSeconds !== undefined ? task.leaseSeconds * 1000 : policy.leaseMs,
    timeoutMs: task.timeoutMs,
    retry: task.retry ?? policy.retry,
    deadlineMs: task.deadlineSeconds !== undefined ? task.deadlineSeconds * 1000 : policy.deadlineMs,
  };
}
