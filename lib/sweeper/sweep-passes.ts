import { releaseCapacity } from '../capacity/capacity.js';
import { freeLeakedSlots, selectLeakedHolders } from '../capacity/capacity.repository.js';
import { inTransaction } from '../db/transaction.js';
import type { Store } from '../db/store.js';
import { FailureCode } from '../operations/lifecycle/failure-code.js';
import { deleteNotificationsOf, insertTerminalNotifications } from '../operations/store/notification.repository.js';
import { deleteKeyAliasesOf } from '../operations/store/key-alias.repository.js';
import { deleteEventsOf } from '../operations/store/operation-event.repository.js';
import {
  deleteOperations,
  selectDueWakeups,
  selectExpiredLeases,
  selectPastDeadline,
  selectPurgeable,
  updateManyInStatus,
} from '../operations/store/operation.repository.js';
import { CLAIMABLE_STATUSES, TRANSITIONS } from '../operations/lifecycle/operation-status.js';

/**
 * One batch of each sweeper duty (DESIGN §6). Each function is one short transaction over at most `limit` rows it
 * has locked with `SKIP LOCKED` (MariaDB), so concurrent sweepers split the work instead of colliding, and returns
 * what it did. Decisions are made here; SQL stays in the repositories.
 */

/** Thrown when a bulk guarded update changed fewer rows than were locked: the transaction is rolled back. */
class SweepRaceError extends Error {}

async function expectAll(changed: Promise<number>, expected: number): Promise<void> {
  const n = await changed;
  if (n !== expected) throw new SweepRaceError(`guarded update changed ${n} of ${expected} locked rows`);
}

/** What one batch of expired leases became: how many rows it locked, and the ids per new state. */
export interface ExpiredLeases {
  readonly scanned: number;
  readonly retried: readonly string[];
  readonly failed: readonly string[];
  readonly cancelled: readonly string[];
}

/**
 * Expired leases (DESIGN §2): cancel requested → `cancelled`; final attempt → `failed` (`lease_expired`); otherwise
 * → `waiting_for_retry`, claimable at once (the lease length already spaced the attempts) and due a wake-up now.
 * Terminal ones get their notification and release all their capacity in the same transaction; retried ones give back
 * their execution (route) slot and keep their admission slots.
 */
export async function expireLeasesBatch(store: Store, limit: number): Promise<ExpiredLeases> {
  return inTransaction(store, async (tx) => {
    const rows = await selectExpiredLeases(tx, limit, store.caps.skipLocked);
    const cancelled = rows.filter((r) => r.cancel_requested_at !== null).map((r) => r.id);
    const failed = rows.filter((r) => r.cancel_requested_at === null && r.attempt >= r.max_attempts).map((r) => r.id);
    const retried = rows.filter((r) => r.cancel_requested_at === null && r.attempt < r.max_attempts).map((r) => r.id);
    const released = { lease_token: null, lease_expires_at: null } as const;
    await expectAll(
      updateManyInStatus(tx, cancelled, TRANSITIONS.lease_expired_cancelled.from, (now) => ({ ...released, status: 'cancelled', finished_at: now })),
      cancelled.length,
    );
    await expectAll(
      updateManyInStatus(tx, failed, TRANSITIONS.lease_expired_final.from, (now) => ({
        ...released,
        status: 'failed',
        finished_at: now,
        failure_code: FailureCode.leaseExpired,
        failure_message: 'lease expired on the final attempt',
      })),
      failed.length,
    );
    await expectAll(
      updateManyInStatus(tx, retried, TRANSITIONS.lease_expired_retry.from, (now) => ({
        ...released,
        status: 'waiting_for_retry',
        available_at: now,
        wake_at: now,
        failure_message: 'lease expired',
      })),
      retried.length,
    );
    await insertTerminalNotifications(tx, [...cancelled, ...failed]);
    await releaseCapacity(tx, [...cancelled, ...failed], 'all');
    await releaseCapacity(tx, retried, 'execution');
    return { scanned: rows.length, retried, failed, cancelled };
  });
}

/** Waiting operations past their deadline → `failed` (`deadline_exceeded`), with notifications, capacity released. Returns their ids. */
export async function failPastDeadlineBatch(store: Store, limit: number): Promise<string[]> {
  return inTransaction(store, async (tx) => {
    const ids = await selectPastDeadline(tx, limit, store.caps.skipLocked);
    await expectAll(
      updateManyInStatus(tx, ids, TRANSITIONS.deadline_passed.from, (now) => ({
        status: 'failed',
        finished_at: now,
        failure_code: FailureCode.deadlineExceeded,
        available_at: null,
        wake_at: null,
      })),
      ids.length,
    );
    await insertTerminalNotifications(tx, ids);
    await releaseCapacity(tx, ids, 'all');
    return ids;
  });
}

/**
 * Frees leaked capacity (DESIGN §4): slots held by an operation that is gone or terminal, and route slots held by one
 * that is no longer running. Every transition releases in its own transaction, so this finds only what a bug, a manual
 * edit or a purge left behind. Returns `{ holders, freed }`: operations looked at, slots freed.
 */
export async function reclaimCapacityBatch(store: Store, limit: number): Promise<{ holders: number; freed: number }> {
  return inTransaction(store, async (tx) => {
    const holders = await selectLeakedHolders(tx, limit);
    return { holders: holders.length, freed: await freeLeakedSlots(tx, holders) };
  });
}

/**
 * Claimable operations whose wake-up is due: pushes their `wake_at` `resendMs` ahead and returns their ids; the
 * caller sends the messages after this commits (if that send fails, they come due again).
 */
export async function takeDueWakeupsBatch(store: Store, limit: number, resendMs: number): Promise<string[]> {
  return inTransaction(store, async (tx) => {
    const ids = await selectDueWakeups(tx, limit, store.caps.skipLocked);
    await expectAll(
      updateManyInStatus(tx, ids, CLAIMABLE_STATUSES, () => ({ wake_at: tx.timeAt(resendMs) })),
      ids.length,
    );
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
