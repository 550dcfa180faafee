import { InvalidTransitionError } from '../../errors.js';

/**
 * The states of an operation (docs/design.md §2).
 *
 * - `queued`: admitted, waiting for a worker. Fails closed at its deadline.
 * - `running`: claimed by a worker holding a lease; the worker heartbeats to keep it.
 * - `waiting_for_retry`: a retryable failure or an expired lease; claimable again at `available_at`.
 * - `waiting_for_external_fallback`: the local route failed and the policy allows an external route.
 * - `succeeded`, `failed`, `cancelled`: terminal. Only an owner retry leaves `failed`/`cancelled`.
 */
export const OperationStatus = Object.freeze({
  queued: 'queued',
  running: 'running',
  waitingForRetry: 'waiting_for_retry',
  waitingForExternalFallback: 'waiting_for_external_fallback',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
} as const);

/** One of the {@link OperationStatus} values. */
export type OperationStatus = (typeof OperationStatus)[keyof typeof OperationStatus];

/** Every status, in lifecycle order. */
export const ALL_STATUSES: readonly OperationStatus[] = Object.freeze(Object.values(OperationStatus));

/** The three terminal states. */
export const TERMINAL_STATUSES: readonly OperationStatus[] = Object.freeze(['succeeded', 'failed', 'cancelled'] as const);

/** The non-terminal states: an operation in one of them holds its admission capacity. */
export const ACTIVE_STATUSES: readonly OperationStatus[] = Object.freeze([
  'queued',
  'running',
  'waiting_for_retry',
  'waiting_for_external_fallback',
] as const);

/**
 * States a worker may claim from. A claim from `waiting_for_external_fallback` runs on the external model route
 * (docs/design.md §5); the other two run as usual (model tasks: on the local route).
 */
export const CLAIMABLE_STATUSES: readonly OperationStatus[] = Object.freeze(['queued', 'waiting_for_retry', 'waiting_for_external_fallback'] as const);

/** Claimable states whose claim runs a model task on its local route (every other task type: its only route). */
export const LOCAL_CLAIM_STATUSES: readonly OperationStatus[] = Object.freeze(['queued', 'waiting_for_retry'] as const);

/** States in which an operation waits without a worker: cancel is immediate, the deadline applies. */
export const WAITING_STATUSES: readonly OperationStatus[] = Object.freeze([
  'queued',
  'waiting_for_retry',
  'waiting_for_external_fallback',
] as const);

/** True for `succeeded`, `failed` and `cancelled`. */
export function isTerminal(status: OperationStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** The events that move an operation (rows of the docs/design.md §2 table, plus `admit`: the row's insert as `queued`). */
export type OperationEvent =
  | 'admit'
  | 'claim'
  | 'owner_cancel'
  | 'deadline_passed'
  | 'complete'
  | 'retryable_failure'
  | 'external_fallback'
  | 'permanent_failure'
  | 'request_cancel'
  | 'acknowledge_cancel'
  | 'lease_expired_retry'
  | 'lease_expired_final'
  | 'lease_expired_cancelled'
  | 'owner_retry';

/**
 * The transition table of docs/design.md §2: the only list of allowed moves. `transitions.ts` writes each move from it — the
 * guarded UPDATE sets `status` to `to` only on a row whose status is in `from` — so a move that is not here cannot be
 * written. `admit` has no `from`: it is the insert of a new row.
 */
export const TRANSITIONS: Readonly<Record<OperationEvent, { readonly from: readonly OperationStatus[]; readonly to: OperationStatus }>> =
  Object.freeze({
    admit: { from: [], to: 'queued' },
    claim: { from: ['queued', 'waiting_for_retry', 'waiting_for_external_fallback'], to: 'running' },
    owner_cancel: { from: WAITING_STATUSES, to: 'cancelled' },
    deadline_passed: { from: WAITING_STATUSES, to: 'failed' },
    complete: { from: ['running'], to: 'succeeded' },
    retryable_failure: { from: ['running'], to: 'waiting_for_retry' },
    external_fallback: { from: ['running'], to: 'waiting_for_external_fallback' },
    permanent_failure: { from: ['running'], to: 'failed' },
    request_cancel: { from: ['running'], to: 'running' },
    acknowledge_cancel: { from: ['running'], to: 'cancelled' },
    lease_expired_retry: { from: ['running'], to: 'waiting_for_retry' },
    lease_expired_final: { from: ['running'], to: 'failed' },
    lease_expired_cancelled: { from: ['running'], to: 'cancelled' },
    owner_retry: { from: ['failed', 'cancelled'], to: 'queued' },
  });

/**
 * The state `event` leads to from `from`.
 * @throws {InvalidTransitionError} when the table has no such move.
 */
export function nextStatus(operationId: string, from: OperationStatus, event: OperationEvent): OperationStatus {
  const transition = TRANSITIONS[event];
  if (!transition.from.includes(from)) throw new InvalidTransitionError(operationId, from, event);
  return transition.to;
}
