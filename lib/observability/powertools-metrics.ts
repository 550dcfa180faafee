import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricsOptions } from '@aws-lambda-powertools/metrics/types';
import { serviceName } from '../logger.js';
import { assertCountValue, type MetricDimensions, type MetricName, type PublishingMetrics } from './metrics.js';

/** The default CloudWatch namespace of every durable-ops metric, when `POWERTOOLS_METRICS_NAMESPACE` is unset or blank. */
export const METRICS_NAMESPACE = 'DurableOps';

/**
 * The CloudWatch namespace in effect: `POWERTOOLS_METRICS_NAMESPACE` (trimmed) when set and not blank, else
 * {@link METRICS_NAMESPACE}. Powertools alone would fall back to `default_namespace` with a warning, so durable-ops
 * resolves it itself.
 * @param env where to read it. @default process.env
 */
export function metricsNamespace(env: NodeJS.ProcessEnv = process.env): string {
  return env.POWERTOOLS_METRICS_NAMESPACE?.trim() || METRICS_NAMESPACE;
}

/**
 * Creates the Powertools `Metrics` instance behind {@link PowertoolsMetrics}: namespace {@link metricsNamespace}, service
 * `serviceName()` (`POWERTOOLS_SERVICE_NAME`, default `durable-ops`; Powertools adds it as the `service` dimension).
 * Reads the environment when called, never at import — also `POWERTOOLS_METRICS_DISABLED` / `POWERTOOLS_DEV`: either one
 * set to true disables output, `POWERTOOLS_METRICS_DISABLED` winning (Powertools v2 Metrics, "Environment variables").
 * @param logger where Powertools sends its own warnings. @default stdout via its console
 */
export function createPowertoolsMetrics(logger?: MetricsOptions['logger']): Metrics {
  return new Metrics({ namespace: metricsNamespace(), serviceName: serviceName(), ...(logger ? { logger } : {}) });
}

/**
 * {@link PublishingMetrics} in CloudWatch Embedded Metric Format through Powertools `Metrics`.
 *
 * Counts are summed in memory per (task type, metric name) and written on {@link publish}, once per invocation: one
 * EMF JSON line on stdout per distinct task type (plus one for dimension-less counts), because an EMF document has one
 * dimension set for all its metrics (AWS "Specification: Embedded metric format", `CloudWatchMetrics[].Dimensions`).
 * Each line looks like
 * ```json
 * {"_aws":{"Timestamp":…,"CloudWatchMetrics":[{"Namespace":"DurableOps","Dimensions":[["service","taskType"]],
 *   "Metrics":[{"Name":"OperationClaimed","Unit":"Count"}]}]},"service":"durable-ops","taskType":"demo.wait","OperationClaimed":2}
 * ```
 * CloudWatch Logs turns it into metrics with no API call. Not safe to share between processes; within one process,
 * concurrent invocations share the buffer, and whichever publishes first writes both (totals stay exact).
 */
export class PowertoolsMetrics implements PublishingMetrics {
  readonly #metrics: Metrics;
  /** task type (`undefined`: no dimension) → metric name → sum. */
  readonly #pending = new Map<string | undefined, Map<MetricName, number>>();

  /** @param metrics the Powertools instance to write through. @default {@link createPowertoolsMetrics}() */
  constructor(metrics: Metrics = createPowertoolsMetrics()) {
    this.#metrics = metrics;
  }

  /** {@inheritDoc OpsMetrics.count} */
  count(name: MetricName, value = 1, dimensions: MetricDimensions = {}): void {
    assertCountValue(value);
    let sums = this.#pending.get(dimensions.taskType);
    if (!sums) this.#pending.set(dimensions.taskType, (sums = new Map()));
    sums.set(name, (sums.get(name) ?? 0) + value);
  }

  /** {@inheritDoc PublishingMetrics.publish} */
  publish(): void {
    const groups = [...this.#pending];
    this.#pending.clear();
    for (const [taskType, sums] of groups) {
      if (taskType !== undefined) this.#metrics.addDimension('taskType', taskType);
      for (const [name, value] of sums) this.#metrics.addMetric(name, MetricUnit.Count, value);
      this.#metrics.publishStoredMetrics();
    }
  }
}
