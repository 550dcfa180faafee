import { recordLifecycle, type LifecycleEvent, type Telemetry } from '../observability/lifecycle-events.js';
import { MetricName } from '../observability/metrics.js';
import type { SweepCounts } from './run-sweep-once.js';

/** Most per-operation lines (`lease_expired`, `deadline_exceeded`) one sweeper run writes; the rest are only counted. */
export const SWEEP_LOG_LIMIT = 50;

/** What a sweeper run reports as it goes: its per-operation transitions, then its summary. */
export interface SweepReport {
  /** One `lease_expired` / `deadline_exceeded` line per operation, until {@link SWEEP_LOG_LIMIT} lines were written. */
  transitions(events: readonly LifecycleEvent[]): void;
  /**
   * The run's summary: one `sweep finished` line with every count, `durationMs` and `transitionsNotLogged` (the
   * per-operation lines left out past the limit), and the `Sweep*` metrics (no dimension; zeros included, so a
   * missing data point means the sweeper did not run).
   */
  finish(counts: SweepCounts, durationMs: number): void;
}

/** Starts the report of one sweeper run (docs/design.md §6: it reports what it did as counts), bounded to `limit` id lines. */
export function startSweepReport(telemetry: Telemetry, limit = SWEEP_LOG_LIMIT): SweepReport {
  let logged = 0;
  let notLogged = 0;
  return {
    transitions(events) {
      for (const event of events) {
        if (logged < limit) {
          recordLifecycle(telemetry, event);
          logged++;
        } else notLogged++;
      }
    },
    finish(counts, durationMs) {
      telemetry.logger.info('sweep finished', { event: 'sweep_finished', ...counts, durationMs, transitionsNotLogged: notLogged });
      const { metrics } = telemetry;
      metrics.count(MetricName.SweepLeasesExpired, counts.leasesRetried + counts.leasesFailed + counts.leasesCancelled);
      metrics.count(MetricName.SweepDeadlinesFailed, counts.deadlinesFailed);
      metrics.count(MetricName.SweepWakeupsSent, counts.wakeupsSent);
      metrics.count(MetricName.SweepPurged, counts.purged);
      metrics.count(MetricName.SweepCapacityReclaimed, counts.capacityReclaimed);
    },
  };
}
