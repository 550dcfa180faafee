import { CompiledQuery } from 'kysely';
import { ROUTE_POOL_PREFIX, RUNNING_POOL_PREFIX } from '../../capacity/capacity.repository.js';
import type { Store } from '../../db/store.js';
import { FieldLimits, truncate } from '../../validation/field-limits.js';
import { newTurnSeed } from '../lease/owner-turns.repository.js';
import type { LeaseKey } from '../store/operation.repository.js';
import type { UncancelledOutcome } from './attempt-outcome.js';

/**
 * The call of `fail_attempt_v2` (migrations/20261202002300_create_turn_retiring_routines_v2.ts; docs/design.md §9): fixed text,
 * compiled once, parameters inline in the one text packet (mysql2 `query`: no server-side prepared statement).
 */
export const FAIL_CALL = `CALL fail_attempt_v2(${Array.from({ length: 12 }, () => '?').join(', ')})`;

/**
 * Runs `fail_attempt_v2` once (one round trip): the decided outcome under the lease while no cancel is recorded, else
 * `cancelled`; null when the lease is gone (nothing changed). The same decision as `failAttempt` (transitions.ts).
 * `message` is truncated to the column's bound here, as `failAttempt` does. `retryInMs` / `waitingWakeMs` in ms.
 * @throws the driver's error for anything the routine re-raised (a deadlock is 1213: `caps.isTransient`).
 */
export async function callFailAttempt(
  store: Store,
  lease: LeaseKey,
  decided: UncancelledOutcome,
  message: string,
  waitingWakeMs: number,
): Promise<UncancelledOutcome['status'] | 'cancelled' | null> {
  const parameters = [
    lease.operationId,
    lease.ownerUserId,
    lease.leaseToken,
    decided.status,
    decided.status === 'failed' ? decided.failureCode : null,
    truncate(message, FieldLimits.failureMessage),
    decided.status === 'waiting_for_retry' ? Math.round(decided.retryInMs) : 0,
    Math.round(waitingWakeMs),
    ROUTE_POOL_PREFIX,
    RUNNING_POOL_PREFIX,
    newTurnSeed(),
    Math.round(store.clockOffsetMs()),
  ];
  const { rows } = await store.db.executeQuery(CompiledQuery.raw(FAIL_CALL, parameters));
  const outcome = (rows as unknown as Array<Array<{ attempt_outcome?: unknown }>>)[0]?.[0]?.attempt_outcome;
  if (outcome === 'lost') return null;
  if (outcome === 'cancelled') return outcome;
  if (outcome === decided.status) return decided.status;
  throw new Error(`fail_attempt_v2 answered ${JSON.stringify(outcome)}`);
}
