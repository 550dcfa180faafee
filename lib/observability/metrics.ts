/**
 * Every metric durable-ops emits, all of unit `Count` (README "Logs and metrics" says what each one counts).
 * Operation metrics carry the `taskType` dimension; `Sweep*` metrics carry none.
 */
export const MetricName = Object.freeze({
  OperationAdmitted: 'OperationAdmitted',
  OperationReplayed: 'OperationReplayed',
  OperationReused: 'OperationReused',
  CapacityRejected: 'CapacityRejected',
  RateLimited: 'RateLimited',
  OperationClaimed: 'OperationClaimed',
  ClaimSkippedOwnerAtLimit: 'ClaimSkippedOwnerAtLimit',
  OperationSucceeded: 'OperationSucceeded',
  OperationFailed: 'OperationFailed',
  OperationCancelled: 'OperationCancelled',
  OperationRetryScheduled: 'OperationRetryScheduled',
  ExternalFallback: 'ExternalFallback',
  LeaseLost: 'LeaseLost',
  SweepLeasesExpired: 'SweepLeasesExpired',
  SweepDeadlinesFailed: 'SweepDeadlinesFailed',
  SweepWakeupsSent: 'SweepWakeupsSent',
  SweepPurged: 'SweepPurged',
  SweepCapacityReclaimed: 'SweepCapacityReclaimed',
} as const);

/** One of the {@link MetricName} values. */
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/**
 * The dimensions a metric may carry. Deliberately only the task type: a dimension's every distinct value is a separate
 * CloudWatch metric (billed, and capped per EMF document), so owner ids, operation ids and subjects — unbounded — are
 * never dimensions; correlate through the `operationId` of the log lines instead.
 */
export interface MetricDimensions {
  readonly taskType?: string;
}

/** The metrics port of the services (an injected seam): they count, an adapter decides where counts go. */
export interface OpsMetrics {
  /**
   * Adds `value` to the metric `name` (unit `Count`) under `dimensions`.
   * @param value a whole number ≥ 0. @default 1
   * @throws {RangeError} for a negative or non-integer value.
   */
  count(name: MetricName, value?: number, dimensions?: MetricDimensions): void;
}

/** {@link OpsMetrics} whose counts are buffered until {@link PublishingMetrics.publish} writes them out. */
export interface PublishingMetrics extends OpsMetrics {
  /** Writes out everything counted since the last call and empties the buffer; a no-op when nothing was counted. */
  publish(): void;
}

/** Checks a {@link OpsMetrics.count} value: a whole number ≥ 0. @throws {RangeError} otherwise. */
export function assertCountValue(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`A metric count must be a whole number ≥ 0, got ${value}`);
}

/** {@link PublishingMetrics} that drop everything: tests, and CLI commands that publish nothing. */
export const noopMetrics: PublishingMetrics = Object.freeze({
  count(_name: MetricName, value = 1) {
    assertCountValue(value);
  },
  publish() {},
});
