import type { Store } from '../db/store.js';
import { describeError, type Logger } from '../logger.js';
import type { OpsMetrics } from '../observability/metrics.js';
import { FailureCode } from '../operations/lifecycle/failure-code.js';
import type { OperationPolicy } from '../operations/operation-policy.js';
import type { WakeupSender } from '../queue/wakeup-sender.js';
import { expireLeasesBatch, failPastDeadlineBatch, purgeBatch, reclaimCapacityBatch, takeDueWakeupsBatch } from './sweep-passes.js';
import type { SweepCounts } from './sweep-counts.js';
import { startSweepReport } from './sweep-report.js';
import { recordSweeperRun } from './sweeper-runs.js';
import { inSpan } from '../tracing/spans.js';

/** What a sweeper run needs. */
export interface SweepDeps {
  readonly store: Store;
  readonly policy: OperationPolicy;
  readonly wakeups: WakeupSender;
  readonly logger: Logger;
  /** Receives the run's `Sweep*` counts. */
  readonly metrics: OpsMetrics;
  /** Rows per batch (each batch is one transaction). */
  readonly batchSize: number;
  /** Stop starting new batches after this many **milliseconds**. */
  readonly timeBudgetMs: number;
}

/** What one run did, as counts (docs/design.md §6); see `SweepCountsSchema`. */
export type { SweepCounts } from './sweep-counts.js';

/**
 * One bounded sweeper run (docs/design.md §6): each pass takes batches of at most `batchSize` rows until a short batch
 * or the time budget, never an unbounded loop. Order: expire leases, fail past deadlines, re-send due wake-ups (which
 * includes the retries the first pass just made), purge old terminal rows (with their notifications and events),
 * reclaim leaked capacity. Safe to run concurrently with itself: every batch locks its rows with `SKIP LOCKED`
 * (MariaDB) or runs under SQLite's single writer, and overlapping runs split a backlog. Cost grows with the rows to
 * act on, not with the table or the backlog: every operation selection reads an index range in its own order and
 * stops at the batch, and locks only the rows it returns (docs/design.md §6).
 *
 * It logs one line per operation it expired or failed (at most `SWEEP_LOG_LIMIT` per run), then a `sweep finished`
 * summary with the counts, and counts the `Sweep*` metrics (see `startSweepReport`); at `DEBUG` it also logs one
 * `sweep pass finished` line per pass (`pass`, `batches`, `rows`, `durationMs`). Last, it records the run in
 * `sweeper_runs` (start, end, counts) and trims records older than 7 days (`recordSweeperRun`; a failure there is only
 * logged). The run is one `sweep` span with the counts (`durable_ops.sweep.*`), its re-sent wake-ups its children.
 * @throws the first database error (the batch it hit rolled back; earlier batches stay committed).
 */
export async function runSweepOnce(deps: SweepDeps): Promise<SweepCounts> {
  return inSpan('sweep', {}, async (span) => {
    const counts = await sweepOnce(deps);
    span.setAttributes(sweepSpanAttributes(counts));
    return counts;
  });
}

/**
 * The `sweep` span's attributes: each count as `durable_ops.sweep.<count in snake case>`, e.g.
 * `durable_ops.sweep.wakeups_sent`. The run's re-sent wake-ups are the span's `wakeup publish` children.
 */
function sweepSpanAttributes(counts: SweepCounts): Record<string, number | boolean> {
  return Object.fromEntries(Object.entries(counts).map(([name, value]) => [`durable_ops.sweep.${name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`, value]));
}

async function sweepOnce(deps: SweepDeps): Promise<SweepCounts> {
  const started = Date.now();
  const report = startSweepReport(deps);
  const counts: SweepCounts = {
    leasesRetried: 0,
    leasesFailed: 0,
    leasesCancelled: 0,
    deadlinesFailed: 0,
    wakeupsSent: 0,
    purged: 0,
    capacityReclaimed: 0,
    budgetExhausted: false,
  };
  const withinBudget = () => {
    if (Date.now() - started < deps.timeBudgetMs) return true;
    counts.budgetExhausted = true;
    return false;
  };
  /** Runs `batch` until a short batch or the budget; at DEBUG, one line per pass: batches, rows taken, duration (ms). */
  const drain = async (pass: string, batch: () => Promise<number>) => {
    const passStarted = Date.now();
    let batches = 0;
    let rows = 0;
    while (withinBudget()) {
      const taken = await batch();
      batches++;
      rows += taken;
      if (taken < deps.batchSize) break;
    }
    deps.logger.debug('sweep pass finished', { pass, batches, rows, durationMs: Date.now() - passStarted });
  };

  await drain('expire_leases', async () => {
    const r = await expireLeasesBatch(deps.store, deps.batchSize);
    counts.leasesRetried += r.retried.length;
    counts.leasesFailed += r.failed.length;
    counts.leasesCancelled += r.cancelled.length;
    report.transitions([
      ...r.cancelled.map((operationId) => ({ event: 'lease_expired', operationId, status: 'cancelled' }) as const),
      ...r.failed.map((operationId) => ({ event: 'lease_expired', operationId, status: 'failed', failureCode: FailureCode.leaseExpired }) as const),
      ...r.retried.map((operationId) => ({ event: 'lease_expired', operationId, status: 'waiting_for_retry' }) as const),
    ]);
    return r.scanned;
  });
  await drain('fail_past_deadline', async () => {
    const ids = await failPastDeadlineBatch(deps.store, deps.batchSize);
    counts.deadlinesFailed += ids.length;
    report.transitions(ids.map((operationId) => ({ event: 'deadline_exceeded', operationId }) as const));
    return ids.length;
  });
  await drain('resend_wakeups', async () => {
    const ids = await takeDueWakeupsBatch(deps.store, deps.batchSize, deps.policy.wakeupResendMs);
    if (ids.length > 0) {
      try {
        await deps.wakeups.send(ids.map((operationId) => ({ v: 1, reason: 'sweeper', operationId }) as const));
        counts.wakeupsSent += ids.length;
      } catch (error) {
        deps.logger.warn('sweeper wake-up send failed; they come due again', { count: ids.length, ...describeError(error) });
      }
    }
    return ids.length;
  });
  await drain('purge', async () => {
    const n = await purgeBatch(deps.store, deps.policy.retentionMs, deps.batchSize);
    counts.purged += n;
    return n;
  });
  await drain('reclaim_capacity', async () => {
    const r = await reclaimCapacityBatch(deps.store, deps.batchSize);
    counts.capacityReclaimed += r.freed;
    return r.holders;
  });
  const durationMs = Date.now() - started;
  report.finish(counts, durationMs);
  await recordSweeperRun(deps, counts, durationMs);
  return counts;
}
