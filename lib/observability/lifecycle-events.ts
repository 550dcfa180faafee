import type { Logger } from '../logger.js';
import { FailureCode } from '../operations/lifecycle/failure-code.js';
import type { OperationStatus } from '../operations/lifecycle/operation-status.js';
import { MetricName, type OpsMetrics } from './metrics.js';

/** Where lifecycle events go: a log line to `logger`, a count to `metrics`. Every service's deps carry both. */
export interface Telemetry {
  readonly logger: Logger;
  readonly metrics: OpsMetrics;
}

/** What every operation event names. */
interface OperationFields {
  readonly operationId: string;
  readonly taskType: string;
}

/** What every end of a worker's attempt names. */
interface AttemptFields extends OperationFields {
  /** 1-based attempt that ended. */
  readonly attempt: number;
  /** Milliseconds from the claim's run start to the decision. */
  readonly durationMs: number;
}

/**
 * One lifecycle event (docs/design.md §2, §4, §5, §6): the only shapes a lifecycle log line can take, so no forbidden field —
 * lease token, idempotency key, request hash, params, subject, failure text, model input or output — can reach one by
 * accident. `operationId` is the correlation key; `status` is the state after the event.
 */
export type LifecycleEvent =
  | (OperationFields & { readonly event: 'operation_admitted' | 'operation_replayed' | 'operation_reused'; readonly status: OperationStatus })
  | { readonly event: 'capacity_rejected'; readonly taskType: string; readonly pool: 'owner' | 'global'; readonly operationId?: string }
  | { readonly event: 'rate_limited'; readonly taskType: string; readonly operationId?: string }
  | (OperationFields & { readonly event: 'operation_claimed'; readonly attempt: number; readonly route?: 'local' | 'external' })
  | (AttemptFields & { readonly event: 'operation_succeeded' | 'lease_lost' })
  | (AttemptFields & { readonly event: 'operation_failed'; readonly failureCode: FailureCode })
  | (AttemptFields & { readonly event: 'operation_retry_scheduled'; readonly failureKind: 'retryable' | 'timeout'; readonly retryInMs: number })
  | (AttemptFields & { readonly event: 'operation_external_fallback'; readonly failureKind: 'retryable' | 'timeout' })
  | (AttemptFields & { readonly event: 'operation_cancelled'; readonly by: 'worker' })
  | (OperationFields & { readonly event: 'operation_cancelled'; readonly by: 'owner' })
  | (OperationFields & { readonly event: 'cancel_requested' | 'owner_retried' })
  | { readonly event: 'lease_expired'; readonly operationId: string; readonly status: 'waiting_for_retry' | 'cancelled' }
  | { readonly event: 'lease_expired'; readonly operationId: string; readonly status: 'failed'; readonly failureCode: typeof FailureCode.leaseExpired }
  | { readonly event: 'deadline_exceeded'; readonly operationId: string }
  | {
      readonly event: 'operator_action';
      readonly action: 'cancel' | 'retry';
      readonly operationId: string;
      /** The operator's JWT `sub`: who acted on the owner's behalf (the owner-level line next to it says `by: owner`). */
      readonly operator: string;
      readonly status: OperationStatus;
    };

/** The name of a {@link LifecycleEvent}: the `event` field of its log line. */
export type LifecycleEventName = LifecycleEvent['event'];

interface EventSpec {
  readonly message: string;
  readonly level: keyof Logger;
  /** Counted with the event's task type as the only dimension. */
  readonly metric?: MetricName;
  /** Fields every line of the event carries. */
  readonly fields?: Readonly<Record<string, string>>;
}

const SPECS: Readonly<Record<LifecycleEventName, EventSpec>> = Object.freeze({
  operation_admitted: { message: 'operation admitted', level: 'info', metric: MetricName.OperationAdmitted },
  operation_replayed: { message: 'admission replayed: same owner, key and request', level: 'info', metric: MetricName.OperationReplayed },
  operation_reused: { message: 'admission answered with the active operation on its subject', level: 'info', metric: MetricName.OperationReused },
  capacity_rejected: { message: 'capacity full: nothing admitted', level: 'info', metric: MetricName.CapacityRejected },
  rate_limited: { message: 'admission rate limit reached: nothing admitted', level: 'info', metric: MetricName.RateLimited },
  operation_claimed: { message: 'operation claimed', level: 'info', metric: MetricName.OperationClaimed, fields: { status: 'running' } },
  operation_succeeded: { message: 'operation succeeded', level: 'info', metric: MetricName.OperationSucceeded, fields: { status: 'succeeded' } },
  operation_failed: { message: 'operation failed', level: 'info', metric: MetricName.OperationFailed, fields: { status: 'failed' } },
  operation_cancelled: { message: 'operation cancelled', level: 'info', metric: MetricName.OperationCancelled, fields: { status: 'cancelled' } },
  operation_retry_scheduled: {
    message: 'attempt failed; retry scheduled',
    level: 'info',
    metric: MetricName.OperationRetryScheduled,
    fields: { status: 'waiting_for_retry' },
  },
  operation_external_fallback: {
    message: 'local model route failed; next attempt on the external route',
    level: 'info',
    metric: MetricName.ExternalFallback,
    fields: { status: 'waiting_for_external_fallback', route: 'local' },
  },
  lease_lost: { message: 'lease lost; leaving the operation to its new owner', level: 'warn', metric: MetricName.LeaseLost },
  cancel_requested: { message: 'owner asked to cancel a running operation', level: 'info', fields: { status: 'running' } },
  owner_retried: { message: 'owner retried the operation', level: 'info', fields: { status: 'queued' } },
  lease_expired: { message: 'sweeper expired a lease', level: 'info' },
  deadline_exceeded: { message: 'sweeper failed an operation past its deadline', level: 'info', fields: { status: 'failed', failureCode: FailureCode.deadlineExceeded } },
  operator_action: { message: "an operator acted on an operation on its owner's behalf", level: 'info' },
});

/**
 * Records one lifecycle event: one log line `{event, …fields}` at the event's level (info; `lease_lost` at warn) and,
 * for the events that have one, one count of its metric with the task type as the only dimension. Call it where the
 * state change was decided (the services), after it committed.
 */
export function recordLifecycle(telemetry: Telemetry, event: LifecycleEvent): void {
  const spec = SPECS[event.event];
  telemetry.logger[spec.level](spec.message, { ...event, ...spec.fields });
  if (spec.metric && 'taskType' in event) telemetry.metrics.count(spec.metric, 1, { taskType: event.taskType });
}
