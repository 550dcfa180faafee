/**
 * What the console reads from the operator API (`/api/ops/*`, docs/design.md §8): aliases of the types
 * `openapi-typescript` generates from the operator OpenAPI document (`console/generate-api-types.ts` writes
 * `./generated/operator-api.d.ts` before every typecheck and build), whose schemas are the server's zod DTO schemas —
 * so a renamed field or a changed type on the server breaks the console's typecheck, with no hand-kept copy between.
 * The server modules themselves are not imported: they also hold database code, which must not enter the browser
 * bundle. No DOM types here: the root typecheck reads this file too.
 */
import type { components } from './generated/operator-api.js';

type Schemas = components['schemas'];

/** `GET /api/ops/operations`: newest first, and the opaque cursor of the next page (null on the last). */
export type OperationPage = Schemas['OperatorOperationPageDto'];

/**
 * An operation as an operator sees it (`OperatorOperationView`). Free-form failure text is not part of it: task code
 * writes it and may quote a provider's error verbatim, so only the CLI (`durable-ops show`) shows it.
 */
export type OperatorOperation = Schemas['OperatorOperationView'];

/** One of the states of an operation (lib/operations/lifecycle/operation-status.ts). */
export type OperationStatus = OperatorOperation['status'];

/** The states of an operation, in lifecycle order; the console's test checks it lists every generated status. */
export const OPERATION_STATUSES = [
  'queued',
  'running',
  'waiting_for_retry',
  'waiting_for_external_fallback',
  'succeeded',
  'failed',
  'cancelled',
] as const satisfies readonly OperationStatus[];

/** The terminal states: nothing changes an operation in one of them but an owner (or operator) retry. */
export const TERMINAL_STATUSES: readonly OperationStatus[] = ['succeeded', 'failed', 'cancelled'];

/** One model call of an operation (provenance): which route, provider and model, and how it ended. */
export type ModelAttempt = OperatorOperation['modelAttempts'][number];

/** `GET /api/ops/operations/{id}`: the operation, its timeline and its terminal notifications. */
export type OperationDetail = Schemas['OperatorOperationDetail'];

/** One state change of an operation, oldest first; `lease_lost` marks a sweeper move after an expired lease. */
export type TimelineEvent = Schemas['TimelineEvent'];

/** A terminal notification of one cycle of an operation. */
export type NotificationView = Schemas['OperatorNotificationView'];

/** `GET /api/ops/capacity`. */
export type CapacityReport = Schemas['CapacityView'];

/**
 * One capacity pool: `held` of `slots` slots in use. A `running` pool (`running:<task type>:<owner>`) is one owner's
 * running attempts of one task type; its `slots` is that owner's running limit.
 */
export type CapacityPool = CapacityReport['pools'][number];

/** Everyone's running attempts of one task type: `running` of them, by `owners` owners. */
export type RunningTotal = CapacityReport['runningByTaskType'][number];

/** `GET /api/ops/recovery`: oldest first. */
export type RecoveryPage = Schemas['UnresolvedRecoveryPageDto'];

/** One unresolved durable recovery operation (`UnresolvedRecoveryDto`) with its chain verification. */
export type RecoveryItem = Schemas['UnresolvedRecoveryDto'];

/** Whether a recovery operation's hash chain verified, and why not. */
export type ChainStatus = RecoveryItem['chain'];

/** `GET /api/ops/sweeps`: newest first. */
export type SweepPage = Schemas['SweeperRunPage'];

/** One sweeper run and what it did (the `SweepCounts` of `runSweepOnce`). */
export type SweepRun = SweepPage['items'][number];

/** `GET /api/ops/throughput?minutes=`: oldest first, zero-filled. */
export type ThroughputReport = Schemas['ThroughputDto'];

/** One minute of throughput: operations admitted and finished in it. */
export type ThroughputBucket = ThroughputReport['buckets'][number];

/**
 * `POST /api/ops/dlq/redrive`: dead letters `moved` back to the queue (each once), `skipped` (already redriven once:
 * reconcile them in the recovery ledger) and `rejected` (refused by SQS).
 */
export type RedriveResult = Schemas['RedriveResult'];

/** `POST /api/ops/recovery/{id}/resolve-unknown`: the recovery operation's new state. */
export type ResolvedRecovery = Schemas['ResolvedRecovery'];
