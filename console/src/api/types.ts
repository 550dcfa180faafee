/**
 * What the console reads from the operator API (`/api/ops/*`, docs/design.md §8). The server's zod DTO schemas are the
 * source of truth and every response passes them (strict) before it is sent; these are the fields the console uses,
 * and `test/console/console-types.test.ts` checks, at compile time, that each server type is assignable to its type
 * here. They are declared rather than imported because the server modules that hold the schemas also hold database
 * code, which must not enter the browser bundle or its typecheck. No DOM types here: the root typecheck reads this
 * file too.
 */

/** The states of an operation, in lifecycle order (lib/operations/lifecycle/operation-status.ts). */
export const OPERATION_STATUSES = [
  'queued',
  'running',
  'waiting_for_retry',
  'waiting_for_external_fallback',
  'succeeded',
  'failed',
  'cancelled',
] as const;

/** One of {@link OPERATION_STATUSES}. */
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** The terminal states: nothing changes an operation in one of them but an owner (or operator) retry. */
export const TERMINAL_STATUSES: readonly OperationStatus[] = ['succeeded', 'failed', 'cancelled'];

/** One model call of an operation (provenance): which route, provider and model, and how it ended. */
export interface ModelAttempt {
  readonly attempt: number;
  readonly route: string;
  readonly provider: string;
  readonly model: string;
  readonly outcome: string;
}

/**
 * An operation as an operator sees it (`OperatorOperationView`). Free-form failure text is not part of it: task code
 * writes it and may quote a provider's error verbatim, so only the CLI (`durable-ops show`) shows it.
 */
export interface OperatorOperation {
  readonly id: string;
  readonly taskType: string;
  readonly status: OperationStatus;
  readonly subject: { readonly type: string; readonly id: string };
  readonly progress: { readonly percent: number; readonly stage: string | null };
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly cancelRequested: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly deadlineAt: string;
  readonly nextAttemptAt: string | null;
  readonly failure: { readonly code: string } | null;
  readonly ownerUserId: string;
  readonly privacyMode: string;
  readonly retryCount: number;
  readonly leaseExpiresAt: string | null;
  readonly heartbeatAt: string | null;
  readonly modelAttempts: readonly ModelAttempt[];
}

/** `GET /api/ops/operations`: newest first, and the opaque cursor of the next page (null on the last). */
export interface OperationPage {
  readonly items: readonly OperatorOperation[];
  readonly nextCursor: string | null;
}

/** One state change of an operation, oldest first; `lease_lost` marks a sweeper move after an expired lease. */
export interface TimelineEvent {
  readonly at: string;
  readonly kind: string;
  readonly from: OperationStatus | null;
  readonly to: OperationStatus;
  readonly attempt: number;
  readonly cycle: number;
  readonly failureCode: string | null;
}

/** A terminal notification of one cycle of an operation. */
export interface NotificationView {
  readonly cycle: number;
  readonly status: string;
  readonly failureCode: string | null;
  readonly createdAt: string;
}

/** `GET /api/ops/operations/{id}`. */
export interface OperationDetail {
  readonly operation: OperatorOperation;
  readonly timeline: readonly TimelineEvent[];
  readonly notifications: readonly NotificationView[];
}

/**
 * One capacity pool: `held` of `slots` slots in use. A `running` pool (`running:<task type>:<owner>`) is one owner's
 * running attempts of one task type; its `slots` is that owner's running limit.
 */
export interface CapacityPool {
  readonly poolKey: string;
  readonly kind: 'global' | 'owner' | 'route' | 'running';
  readonly slots: number;
  readonly held: number;
}

/** Everyone's running attempts of one task type (`RunningTotalView`): `running` of them, by `owners` owners. */
export interface RunningTotal {
  readonly taskType: string;
  readonly running: number;
  readonly owners: number;
}

/** `GET /api/ops/capacity`. */
export interface CapacityReport {
  readonly pools: readonly CapacityPool[];
  readonly runningByTaskType: readonly RunningTotal[];
}

/** Whether a recovery operation's hash chain verified, and why not. */
export interface ChainStatus {
  readonly ok: boolean;
  readonly reason: string | null;
}

/** One unresolved durable recovery operation (`UnresolvedRecoveryDto`) with its chain verification. */
export interface RecoveryItem {
  readonly id: string;
  readonly module: string;
  readonly kind: string;
  readonly state: string;
  readonly effectClass: string;
  readonly fence: number;
  readonly checkpointCount: number;
  readonly leaseExpiresAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly stale: boolean;
  readonly reconciliation: string;
  /** Absent from servers older than the operator console, which did not send the chain verdict. */
  readonly chain?: ChainStatus;
}

/** `GET /api/ops/recovery`: oldest first. */
export interface RecoveryPage {
  readonly items: readonly RecoveryItem[];
}

/** One sweeper run and what it did (the `SweepCounts` of `runSweepOnce`). */
export interface SweepRun {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly counts: Readonly<Record<string, number | boolean>>;
}

/** `GET /api/ops/sweeps`: newest first. */
export interface SweepPage {
  readonly items: readonly SweepRun[];
}

/** One minute of throughput: operations admitted and finished in it. */
export interface ThroughputBucket {
  readonly minute: string;
  readonly admitted: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
}

/** `GET /api/ops/throughput?minutes=`: oldest first, zero-filled. */
export interface ThroughputReport {
  readonly buckets: readonly ThroughputBucket[];
}

/**
 * `POST /api/ops/dlq/redrive`: dead letters `moved` back to the queue (each once), `skipped` (already redriven once:
 * reconcile them in the recovery ledger) and `rejected` (refused by SQS).
 */
export interface RedriveResult {
  readonly moved: number;
  readonly skipped: number;
  readonly rejected: number;
}

/** `POST /api/ops/recovery/{id}/resolve-unknown`: the recovery operation's new state. */
export interface ResolvedRecovery {
  readonly id: string;
  readonly state: string;
}
