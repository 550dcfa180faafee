import type { Store } from './store.js';
import { retryTransient } from './transient-retry.js';

/**
 * Runs a step as its stored procedure when the store has them (`caps.serverRoutines`, docs/design.md §9) — one
 * `CALL`, retried on a deadlock or lock wait timeout like a transaction — and otherwise, or when the routine is not
 * there or not granted (`caps.isRoutineUnavailable`: the moment between a deploy and its migration, or an application
 * user not yet granted `EXECUTE`), the same step in-process. Either way the caller gets the same decision.
 */
export async function viaRoutine<T>(store: Store, routine: () => Promise<T>, inProcess: () => Promise<T>): Promise<T> {
  if (!store.caps.serverRoutines) return inProcess();
  try {
    return await retryTransient(store.caps, routine);
  } catch (error) {
    if (!store.caps.isRoutineUnavailable(error)) throw error;
    return inProcess();
  }
}
