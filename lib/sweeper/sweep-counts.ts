import { z } from 'zod';

const count = z.number().int().min(0);

/**
 * What one sweeper run did, as counts (docs/design.md §6): what `runSweepOnce` returns, logs, stores in `sweeper_runs` and the
 * operator API shows (`GET /api/ops/sweeps`). A change to it must keep rows already stored readable (7 days of them).
 */
export const SweepCountsSchema = z.strictObject({
  /** Expired leases moved to `waiting_for_retry`. */
  leasesRetried: count,
  /** Expired leases on the final attempt moved to `failed` (`lease_expired`). */
  leasesFailed: count,
  /** Expired leases with a cancel requested moved to `cancelled`. */
  leasesCancelled: count,
  /** Waiting operations failed with `deadline_exceeded`. */
  deadlinesFailed: count,
  /** Wake-ups re-sent for claimable operations no worker has taken. */
  wakeupsSent: count,
  /** Terminal operations (with their notifications and events) purged after `RETENTION_DAYS`. */
  purged: count,
  /** Leaked capacity slots freed (held by a missing or terminal operation, or a route slot of one not running). */
  capacityReclaimed: count,
  /** True when the time budget ended the run before every pass drained. */
  budgetExhausted: z.boolean(),
});

/** See {@link SweepCountsSchema}. */
export type SweepCounts = z.infer<typeof SweepCountsSchema>;
