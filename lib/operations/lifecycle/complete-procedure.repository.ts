import { CompiledQuery } from 'kysely';
import type { Store } from '../../db/store.js';
import type { LeaseKey } from '../store/operation.repository.js';

/**
 * The call of `complete_operations_v2` (migrations/20261202002300_create_turn_retiring_routines_v2.ts; docs/design.md
 * §9): fixed text, compiled once; the leases go as one JSON parameter, inline in the one text packet (mysql2 `query`:
 * no server-side prepared statement). A group of 32 leases is about 4.5 KB, well under the 16 KB of statement text
 * above which RDS Proxy pins a session.
 */
export const COMPLETE_CALL = 'CALL complete_operations_v2(?, ?, ?)';

/**
 * What the routine did: `held` — the ids it moved to `succeeded` (the listed leases that held and were not locked by
 * another transaction; the rest were left untouched) and `due` — those of them whose owner still has a due
 * operation of the task type (read after the commit), or `lapsed` — a lease ran out under its lock, nothing changed.
 */
export type CompleteCallOutcome =
  | { readonly outcome: 'completed'; readonly held: readonly string[]; readonly due: readonly string[] }
  | { readonly outcome: 'lapsed' };

/**
 * Runs `complete_operations_v2` once (one round trip): `running → succeeded` for the listed leases that hold, with
 * their notifications, capacity and idle turns, in one transaction. `locks`: `skip` leaves out rows another transaction holds (a
 * group, whose left-out members go alone), `wait` waits for them (a completion alone).
 * @throws the driver's error for anything the routine re-raised (a deadlock is 1213: `caps.isTransient`).
 * @throws {Error} when the answer is not one the routine gives.
 */
export async function callCompleteOperations(store: Store, leases: readonly LeaseKey[], locks: 'skip' | 'wait'): Promise<CompleteCallOutcome> {
  const json = JSON.stringify(leases.map((lease) => [lease.operationId, lease.ownerUserId, lease.leaseToken]));
  const { rows } = await store.db.executeQuery(CompiledQuery.raw(COMPLETE_CALL, [json, locks === 'wait' ? 1 : 0, Math.round(store.clockOffsetMs())]));
  // [[the one answer row], OkPacket]
  const answer = (rows as unknown as Array<Array<{ completion_outcome?: unknown; held?: unknown; due?: unknown }>>)[0]?.[0];
  if (answer?.completion_outcome === 'lapsed') return { outcome: 'lapsed' };
  if (answer?.completion_outcome === 'completed' && typeof answer.held === 'string' && typeof answer.due === 'string') {
    return { outcome: 'completed', held: JSON.parse(answer.held) as string[], due: JSON.parse(answer.due) as string[] };
  }
  throw new Error(`complete_operations_v2 answered ${JSON.stringify(answer)}`);
}
