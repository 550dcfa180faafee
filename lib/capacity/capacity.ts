import { CapacityExhaustedError } from '../errors.js';
import type { TxContext } from '../db/database.js';
import type { Store } from '../db/store.js';
import {
  GLOBAL_POOL_PREFIX,
  insertMissingSlots,
  OWNER_POOL_PREFIX,
  releaseSlotsOf,
  ROUTE_POOL_PREFIX,
  RUNNING_POOL_PREFIX,
  selectFreeSlots,
  slotExists,
  takeSlots,
} from './capacity.repository.js';
import type { CapacityPolicy } from './capacity-policy.js';
import { retryTransient } from '../db/transient-retry.js';

/** Pool of one owner's active operations of one task type. */
export function ownerPoolKey(taskType: string, ownerUserId: string): string {
  return `${OWNER_POOL_PREFIX}${taskType}:${ownerUserId}`;
}

/** Pool of everyone's active operations of one task type. */
export function globalPoolKey(taskType: string): string {
  return `${GLOBAL_POOL_PREFIX}${taskType}`;
}

/** Pool of one owner's running attempts of one task type (the running limit, docs/design.md §4 fair share). */
export function runningPoolKey(taskType: string, ownerUserId: string): string {
  return `${RUNNING_POOL_PREFIX}${taskType}:${ownerUserId}`;
}

/** Pool of running attempts on one execution route (e.g. `route:local-model`). */
export function routePoolKey(route: string): string {
  return `${ROUTE_POOL_PREFIX}${route}`;
}

/** Pool creations in flight in this process, so concurrent first admissions create a pool once, not once each. */
const creating = new WeakMap<Store, Map<string, Promise<void>>>();

/**
 * Makes sure the pool has slot rows `0 … limit − 1`, creating missing ones (idempotent, safe concurrently). One
 * primary-key lookup when the pool exists (its last slot is there); runs outside the reserving transaction so slot
 * creation never holds its locks. Concurrent creations in one process share one insert; a deadlock between
 * processes creating the same pool is retried.
 */
export async function ensurePool(store: Store, poolKey: string, limit: number): Promise<void> {
  if (await slotExists(store, poolKey, limit - 1)) return;
  let inFlight = creating.get(store);
  if (!inFlight) creating.set(store, (inFlight = new Map()));
  const key = `${poolKey}#${limit}`;
  let pending = inFlight.get(key);
  if (!pending) {
    const pools = inFlight;
    pending = createPool(store, poolKey, limit).finally(() => pools.delete(key));
    inFlight.set(key, pending);
  }
  await pending;
}

async function createPool(store: Store, poolKey: string, limit: number): Promise<void> {
  await retryTransient(store.caps, () => insertMissingSlots(store, poolKey, 0, limit));
}

/**
 * Gives one free slot of the pool (below `limit`) to `operationId`, inside the caller's transaction, so the slot is
 * held exactly when the state change commits. Returns false when every slot is taken (or, on MariaDB, locked by a
 * concurrent reserver that has not committed yet — a conservative "full").
 */
export async function reserveSlot(tx: TxContext, skipLocked: boolean, poolKey: string, limit: number, operationId: string): Promise<boolean> {
  for (let race = 0; race < 3; race++) {
    const slot = await findFreeSlot(tx, skipLocked, { key: poolKey, limit });
    if (slot === undefined) return false;
    if ((await takeSlots(tx, [{ poolKey, slotNo: slot }], operationId)) === 1) return true;
  }
  return false;
}

/**
 * A free slot of the pool, locked for the caller's transaction on MariaDB (`SKIP LOCKED`), or undefined when none is.
 * The search starts at a random slot and wraps around (a second read only when nothing is free above the start):
 * which slot is held does not matter, and reservers that all searched from slot 0 would each walk every held slot at
 * the front of a busy pool first (`npm run bench`: over 1,000 rows read per reservation at 300 admissions/s).
 */
async function findFreeSlot(tx: TxContext, skipLocked: boolean, pool: { readonly key: string; readonly limit: number }): Promise<number | undefined> {
  return (await lockFreeSlots(tx, skipLocked, pool, 1))[0];
}

/**
 * Up to `count` free slots of the pool (below its `limit`), locked for the caller's transaction on MariaDB (`SKIP
 * LOCKED`: slots another reserver holds locked count as taken), from a random start wrapping around, as
 * {@link findFreeSlot}. Fewer (or none) when the pool has fewer free. The caller takes the ones it uses with
 * {@link takeSlot}; the rest stay free.
 */
export async function lockFreeSlots(tx: TxContext, skipLocked: boolean, pool: { readonly key: string; readonly limit: number }, count: number): Promise<number[]> {
  if (count <= 0) return [];
  const start = Math.floor(Math.random() * pool.limit);
  const slots = await selectFreeSlots(tx, pool.key, { from: start, below: pool.limit }, skipLocked, count);
  if (slots.length >= count || start === 0) return slots;
  return [...slots, ...(await selectFreeSlots(tx, pool.key, { from: 0, below: start }, skipLocked, count - slots.length))];
}

/**
 * Gives one slot locked by {@link lockFreeSlots} to `operationId` in the caller's transaction.
 * @throws {Error} when the slot was taken anyway (an invariant broken: it was locked and free); nothing is kept.
 */
export async function takeSlot(tx: TxContext, poolKey: string, slotNo: number, operationId: string): Promise<void> {
  if ((await takeSlots(tx, [{ poolKey, slotNo }], operationId)) !== 1) throw new Error(`Capacity slot ${poolKey}#${slotNo} changed under its lock`);
}

/** Whether the pool has all its slot rows for `limit` (a primary-key lookup of the last one). */
export function poolComplete(store: Store | TxContext, poolKey: string, limit: number): Promise<boolean> {
  return slotExists(store, poolKey, limit - 1);
}

/** The two admission pools of an operation and their limits, and the owner's running pool its claims will use. */
export interface AdmissionPools {
  readonly owner: { readonly key: string; readonly limit: number };
  readonly global: { readonly key: string; readonly limit: number };
  readonly running: { readonly key: string; readonly limit: number };
  readonly retryAfterSeconds: number;
}

/**
 * Admission pools this process has seen complete (`<pool key>#<limit>`), per store: slot rows are never deleted by
 * the code, so a later admission skips the two existence lookups. At most {@link KNOWN_POOLS_MAX} entries per store
 * (then forgotten all at once: the next admissions look again). Should rows vanish anyway (an operator, a test),
 * {@link restoreMissingPools} re-verifies on the "full" path, so a stale entry costs one retried transaction, never a
 * wrong 429.
 */
const knownPools = new WeakMap<Store, Set<string>>();

/** Bound of {@link knownPools} per store. */
const KNOWN_POOLS_MAX = 10_000;

function knownPoolsOf(store: Store): Set<string> {
  let known = knownPools.get(store);
  if (!known) knownPools.set(store, (known = new Set()));
  return known;
}

async function ensureAdmissionPool(store: Store, pool: { readonly key: string; readonly limit: number }): Promise<void> {
  const known = knownPoolsOf(store);
  const id = `${pool.key}#${pool.limit}`;
  if (known.has(id)) return;
  await ensurePool(store, pool.key, pool.limit);
  if (known.size >= KNOWN_POOLS_MAX) known.clear();
  known.add(id);
}

/**
 * After a reservation found a pool full: checks that both pools still have their slot rows (two primary-key lookups),
 * re-creating any that vanished. Returns true when one had to be re-created — the reservation should be retried —
 * and false when the pools are complete, so "full" was the truth.
 */
export async function restoreMissingPools(store: Store, pools: AdmissionPools): Promise<boolean> {
  let restored = false;
  for (const pool of [pools.owner, pools.global]) {
    if (await slotExists(store, pool.key, pool.limit - 1)) continue;
    knownPoolsOf(store).delete(`${pool.key}#${pool.limit}`);
    await ensureAdmissionPool(store, pool);
    restored = true;
  }
  return restored;
}

/**
 * Resolves (and creates, if new) the admission pools for an owner on `plan` admitting `taskType`, and the owner's
 * running pool for that task type (so its first claim finds the slot rows in place). A pool this process
 * already saw complete is not looked up again (see {@link restoreMissingPools} for the full path).
 */
export async function prepareAdmissionPools(
  store: Store,
  capacity: CapacityPolicy,
  taskType: string,
  ownerUserId: string,
  plan: string,
): Promise<AdmissionPools> {
  const limits = capacity.admissionLimits(taskType, plan);
  const pools: AdmissionPools = {
    owner: { key: ownerPoolKey(taskType, ownerUserId), limit: limits.perOwner },
    global: { key: globalPoolKey(taskType), limit: limits.global },
    running: { key: runningPoolKey(taskType, ownerUserId), limit: capacity.runningLimit(taskType, plan) },
    retryAfterSeconds: capacity.retryAfterSeconds,
  };
  await ensureAdmissionPool(store, pools.owner);
  await ensureAdmissionPool(store, pools.global);
  await ensureAdmissionPool(store, pools.running);
  return pools;
}

/**
 * Reserves an owner slot and a global slot for an operation being admitted or retried, in the caller's transaction.
 * The owner pool is searched first, so an owner at their own limit never touches the shared pool; both slots are then
 * taken in one statement (one round trip fewer per admission). The update cannot miss: on MariaDB both reads
 * locked their slot, and a SQLite transaction whose reads went stale fails its first write (`SQLITE_BUSY_SNAPSHOT`,
 * retried by `inTransaction`) instead of changing fewer rows.
 * This is where a 429 is decided: a full owner pool or a full global pool throws {@link CapacityExhaustedError}, which
 * admission and owner retry let through — after one re-check that the pool's rows exist (`restoreMissingPools`), so a
 * purge cannot fake "full" — and the API maps to `429 capacity_exhausted` with `Retry-After: retryAfterSeconds`.
 * @throws {CapacityExhaustedError} when either pool is full; the caller's transaction must roll back.
 * @throws {Error} should the update change fewer than both slots (an invariant broken); nothing is kept.
 */
export async function reserveAdmission(tx: TxContext, skipLocked: boolean, pools: AdmissionPools, operationId: string): Promise<void> {
  const owner = await findFreeSlot(tx, skipLocked, pools.owner);
  if (owner === undefined) throw new CapacityExhaustedError('owner', pools.retryAfterSeconds);
  const global = await findFreeSlot(tx, skipLocked, pools.global);
  if (global === undefined) throw new CapacityExhaustedError('global', pools.retryAfterSeconds);
  const slots = [
    { poolKey: pools.owner.key, slotNo: owner },
    { poolKey: pools.global.key, slotNo: global },
  ];
  const taken = await takeSlots(tx, slots, operationId);
  if (taken !== slots.length) throw new Error(`Capacity slots of operation ${operationId} changed under their locks: ${taken} of ${slots.length} taken`);
}

/**
 * Releases capacity in the caller's transaction: `all` at a terminal transition (admission and execution slots),
 * `execution` when an attempt ends without ending the operation (retry wait, lease loss): its route slot and its
 * owner's running slot. Returns slots freed.
 */
export function releaseCapacity(tx: TxContext, operationIds: readonly string[], scope: 'all' | 'execution'): Promise<number> {
  return releaseSlotsOf(tx, operationIds, scope === 'execution');
}
