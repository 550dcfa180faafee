import { freeLeakedSlots, selectLeakedHolders } from '../capacity/capacity.repository.js';
import { reconcileRow, selectDriftedRows } from '../capacity/owner-capacity.repository.js';
import { inTransaction } from '../db/transaction.js';
import type { Store } from '../db/store.js';
import { attemptOutcome } from '../operations/lifecycle/attempt-outcome.js';
import { pushWakeAt, selectExpiredLeases } from '../operations/lifecycle/lifecycle.repository.js';
import { expireLeases, failPastDeadline, type ExpiredLeaseMoves } from '../operations/lifecycle/transitions.js';
import { deleteNotificationsOf } from '../operations/store/notification.repository.js';
import { deleteKeyAliasesOf } from '../operations/store/key-alias.repository.js';
import { deleteEventsOf } from '../operations/store/operation-event.repository.js';
import { deleteOperations, selectDueWakeups, selectPastDeadline, selectPurgeable } from '../operations/store/operation.repository.js';
import { CLAIMABLE_STATUSES } from '../operations/lifecycle/operation-status.js';
import { markOwnersReady } from '../operations/lease/owner-turns.repository.js';

/**
 * One batch of each sweeper duty (docs/design.md §6). Each function is one short transaction over at most `limit` rows
 * and returns what it did. The operation passes select their rows with index-ordered reads that stop at `limit`
 * (about `limit` index entries read, whatever the backlog) and lock them `FOR UPDATE SKIP LOCKED` on MariaDB — only the
 * rows the batch then changes — so concurrent sweepers split a backlog instead of one waiting for the other. Decisions
 * are made here; SQL stays in the repositories.
 */

/** What one batch of expired leases became: how many rows it locked, and the ids per new state. */
export interface ExpiredLeases extends ExpiredLeaseMoves {
  readonly scanned: number;
}

/**
 * Expired leases (docs/design.md §2), each as {@link attemptOutcome} decides for kind `lease_expired`: cancel requested →
 * `cancelled`; final attempt → `failed` (`lease_expired`); otherwise → `waiting_for_retry`, claimable at once (the lease
 * length already spaced the attempts) and due a wake-up now. The moves are `expireLeases` (lifecycle): terminal ones
 * get their notification and release all their capacity in the same transaction; retried ones give back their
 * execution (route) slot and keep their admission slots.
 */
export async function expireLeasesBatch(store: Store, limit: number): Promise<ExpiredLeases> {
  return inTransaction(store, async (tx) => {
    const rows = await selectExpiredLeases(tx, limit, store.caps.skipLocked);
    const moves = await expireLeases(tx, rows, (row) =>
      attemptOutcome({ kind: 'lease_expired', attempt: row.attempt, maxAttempts: row.max_attempts, cancelRequested: row.cancel_requested_at !== null, retryInMs: 0 }),
    );
    return { scanned: rows.length, ...moves };
  });
}

/**
 * Up to `limit` waiting operations past their deadline → `failed` (`deadline_exceeded`), with notifications, capacity
 * released. The rows come status by status, oldest deadline first within each (`selectPastDeadline`), and are the
 * only operation rows the batch locks. Returns their ids.
 */
export async function failPastDeadlineBatch(store: Store, limit: number): Promise<string[]> {
  return inTransaction(store, async (tx) => {
    const ids = await selectPastDeadline(tx, limit, store.caps.skipLocked);
    await failPastDeadline(tx, ids);
    return ids;
  });
}

/**
 * Frees leaked capacity (docs/design.md §4): slots held by an operation that is gone or terminal, and route slots held by one
 * that is no longer running; then owner counters (`owner_capacity`) that differ from their operations, each set to
 * what its operations say under its row lock (`reconcileRow`; a row in use is left for the next run). Every transition
 * releases in its own transaction, so this finds only what a bug, a manual edit, a purge or an earlier release left
 * behind. Returns `{ holders, freed }`: operations and counter rows acted on, slots freed plus counter rows corrected.
 */
export async function reclaimCapacityBatch(store: Store, limit: number): Promise<{ holders: number; freed: number }> {
  return inTransaction(store, async (tx) => {
    const holders = await selectLeakedHolders(tx, limit);
    const freed = await freeLeakedSlots(tx, holders);
    let corrected = 0;
    for (const row of await selectDriftedRows(tx, limit)) if (await reconcileRow(tx, row, store.caps.skipLocked)) corrected++;
    return { holders: holders.length + corrected, freed: freed + corrected };
  });
}

/**
 * Up to `limit` claimable operations whose wake-up is due (status by status, oldest `wake_at` first within each:
 * `selectDueWakeups`): pushes their `wake_at` `resendMs` (milliseconds) ahead, makes their owners' turns ready
 * (`markOwnersReady` — a repair: every move into a claimable state already did, but a row written by an older release,
 * or by hand, would otherwise never be claimed in the fair order) and returns their ids; the caller sends the messages
 * after this commits (if that send fails, they come due again).
 */
export async function takeDueWakeupsBatch(store: Store, limit: number, resendMs: number): Promise<string[]> {
  return inTransaction(store, async (tx) => {
    const ids = await selectDueWakeups(tx, limit, store.caps.skipLocked);
    const pushed = await pushWakeAt(tx, ids, CLAIMABLE_STATUSES, resendMs);
    if (pushed !== ids.length) throw new Error(`wake-up push changed ${pushed} of ${ids.length} locked rows`);
    await markOwnersReady(tx, ids);
    return ids;
  });
}

/**
 * Deletes terminal operations finished more than `retentionMs` ago, with their notifications, key aliases and events
 * (`operation_events`), in one transaction. Returns operations deleted.
 */
export async function purgeBatch(store: Store, retentionMs: number, limit: number): Promise<number> {
  return inTransaction(store, async (tx) => {
    const ids = await selectPurgeable(tx, retentionMs, limit, store.caps.skipLocked);
    await deleteNotificationsOf(tx, ids);
    await deleteKeyAliasesOf(tx, ids);
    await deleteEventsOf(tx, ids);
    return deleteOperations(tx, ids);
  });
}
