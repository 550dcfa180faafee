import type { Logger } from '../../lib/logger.js';
import type { MetricDimensions, MetricName, PublishingMetrics } from '../../lib/observability/metrics.js';
import { assertCountValue } from '../../lib/observability/metrics.js';

/** One captured log line: its level, message and context, as the JSON a real logger would print. */
export interface RecordedLine {
  readonly level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  readonly message: string;
  readonly fields: Record<string, unknown>;
  /** The whole line as JSON, for "never contains" scans. */
  readonly json: string;
}

/** A {@link Logger} that keeps every line. */
export class RecordingLogger implements Logger {
  readonly lines: RecordedLine[] = [];
  debug(message: string, context: Record<string, unknown> = {}): void {
    this.#keep('DEBUG', message, context);
  }
  info(message: string, context: Record<string, unknown> = {}): void {
    this.#keep('INFO', message, context);
  }
  warn(message: string, context: Record<string, unknown> = {}): void {
    this.#keep('WARN', message, context);
  }
  error(message: string, context: Record<string, unknown> = {}): void {
    this.#keep('ERROR', message, context);
  }
  /** The `event` names of the lines naming `operationId`, in order. */
  eventsOf(operationId: string): unknown[] {
    return this.lines.filter((line) => line.fields.operationId === operationId).map((line) => line.fields.event);
  }
  #keep(level: RecordedLine['level'], message: string, fields: Record<string, unknown>): void {
    this.lines.push({ level, message, fields: { ...fields }, json: JSON.stringify({ level, message, ...fields }) });
  }
}

/** One recorded count. */
export interface RecordedCount {
  readonly name: MetricName;
  readonly value: number;
  readonly dimensions: MetricDimensions;
}

/** {@link PublishingMetrics} that keep every count (and how many times they were published). */
export class RecordingMetrics implements PublishingMetrics {
  readonly counts: RecordedCount[] = [];
  published = 0;
  count(name: MetricName, value = 1, dimensions: MetricDimensions = {}): void {
    assertCountValue(value);
    this.counts.push({ name, value, dimensions: { ...dimensions } });
  }
  publish(): void {
    this.published++;
  }
  /** The sum of `name`'s counts, optionally only those with `taskType`. */
  total(name: MetricName, taskType?: string): number {
    return this.counts.filter((c) => c.name === name && (taskType === undefined || c.dimensions.taskType === taskType)).reduce((sum, c) => sum + c.value, 0);
  }
}
