import { CapacityExhaustedError } from '../errors.js';
import type { TxContext } from '../db/database.js';
import type { Store } from '../db/store.js';
import { GLOBAL_POOL_PREFIX, insertMissingSlots, releaseSlotsOf, ROUTE_POOL_PREFIX, selectFreeSlots, slotExists, takeSlots } from './capacity.repository.js';
import { decrementCounters, ensureOwnerCapacityRows, incrementActive, ownerCapacityRowExists, type OwnerPair } from './owner-capacity.repository.js';
import type { CapacityPolicy } from './capacity-policy.js';
import { retryTransient } from '../db/transient-retry.js';

/** Pool of everyone's active operations of one task type. */
export function globalPoolKey(taskType: string): string {
  return `${GLOBAL_POOL_PREFIX}${taskType}`;
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

/**
 * The capacity an admission takes: a unit of its owner's `active` counter for the task type (`owner_capacity`, below
 * `limit`) and a slot of the task type's global pool.
 */
export interface AdmissionPools {
  readonly owner: OwnerPair & { readonly limit: number };
  readonly global: { readonly key: string; readonly limit: number };
  readonly retryAfterSeconds: number;
}

/**
 * Global pools and owner counter rows this process has seen complete (`<pool key>#<limit>`, `<task type>\0<owner>`),
 * per store: neither is ever deleted by the code, so a later admission skips the existence lookups. At most
 * {@link KNOWN_MAX} entries per store (then forgotten all at once: the next admissions look again). Should rows vanish
 * anyway (an operator, a test), {@link restoreMissingPools} re-verifies on the "full" path, so a stale entry costs one
 * retried transaction, never a wrong 429.
 */
const knownRows = new WeakMap<Store, Set<string>>();

/** Bound of {@link knownRows} per store. */
const KNOWN_MAX = 10_000;

function knownRowsOf(store: Store): Set<string> {
  let known = knownRows.get(store);
  if (!known) knownRows.set(store, (known = new Set()));
  return known;
}

function remember(store: Store, id: string): void {
  const known = knownRowsOf(store);
  if (known.size >= KNOWN_MAX) known.clear();
  known.add(id);
}

const globalId = (pool: AdmissionPools['global']) => `${pool.key}#${pool.limit}`;
const ownerId = (pair: OwnerPair) => `${pair.taskType}\u0000${pair.ownerUserId}`;

/**
 * Creates what is missing of the admission's rows: on their own statements — or, with `caller` (the caller's open
 * transaction, docs/design.md §4 "Admission inside the caller's transaction"), in it: SQLite's one connection runs no
 * statement beside an open transaction, and what the caller rolls back must take nothing of its own along. Rows seen
 * there are not remembered (they may be the caller's, uncommitted), and not retried on a transient error (a deadlock
 * ends the caller's transaction: the caller runs it again).
 */
async function ensureAdmissionRows(store: Store, pools: AdmissionPools, caller?: TxContext): Promise<void> {
  const known = knownRowsOf(store);
  if (!known.has(globalId(pools.global))) {
    if (caller) {
      if (!(await slotExists(caller, pools.global.key, pools.global.limit - 1))) await insertMissingSlots(caller, pools.global.key, 0, pools.global.limit);
    } else {
      await ensurePool(store, pools.global.key, pools.global.limit);
      remember(store, globalId(pools.global));
    }
  }
  if (!known.has(ownerId(pools.owner))) {
    const ctx = caller ?? store;
    if (!(await ownerCapacityRowExists(ctx, pools.owner))) await ensureOwnerCapacityRows(ctx, [pools.owner]);
    if (!caller) remember(store, ownerId(pools.owner));
  }
}

/**
 * After a reservation found the owner or the pool full: checks that the owner's counter row and the global pool's
 * slot rows still exist (two primary-key lookups), re-creating what vanished. Returns true when something had to be
 * re-created — the reservation should be retried — and false when both are complete, so "full" was the truth.
 * `caller`: the caller's open transaction, in which the lookups and creations run (see {@link prepareAdmissionPools}).
 */
export async function restoreMissingPools(store: Store, pools: AdmissionPools, caller?: TxContext): Promise<boolean> {
  const ctx = caller ?? store;
  let restored = false;
  if (!(await slotExists(ctx, pools.global.key, pools.global.limit - 1))) {
    knownRowsOf(store).delete(globalId(pools.global));
    restored = true;
  }
  if (!(await ownerCapacityRowExists(ctx, pools.owner))) {
    knownRowsOf(store).delete(ownerId(pools.owner));
    restored = true;
  }
  if (restored) await ensureAdmissionRows(store, pools, caller);
  return restored;
}

/**
 * Resolves (and creates, if new) the admission capacity for an owner on `plan` admitting `taskType`: the owner's
 * counter row (created with counts from its operations, `ensureOwnerCapacityRows`) and the global pool's slot rows.
 * What this process already saw complete is not looked up again (see {@link restoreMissingPools} for the full path).
 * Missing rows are created on statements of their own, committed at once — or, with `caller` (an admission or owner
 * retry inside the caller's open transaction, docs/design.md §4), in that transaction, so they commit or roll back
 * with it.
 */
export async function prepareAdmissionPools(
  store: Store,
  capacity: CapacityPolicy,
  taskType: string,
  ownerUserId: string,
  plan: string,
  caller?: TxContext,
): Promise<AdmissionPools> {
  const limits = capacity.admissionLimits(taskType, plan);
  const pools: AdmissionPools = {
    owner: { taskType, ownerUserId, limit: limits.perOwner },
    global: { key: globalPoolKey(taskType), limit: limits.global },
    retryAfterSeconds: capacity.retryAfterSeconds,
  };
  await ensureAdmissionRows(store, pools, caller);
  return pools;
}

/**
 * Reserves the admission capacity of an operation being admitted or retried, in the caller's transaction, after its
 * row was written and before its turn is (lock order, `owner-capacity.repository.ts`): one unit of the owner's
 * `active` counter first — one guarded UPDATE, so an owner at their own limit never touches the shared pool — then
 * a free global slot (`SKIP LOCKED` from a random start). This is where a 429 is decided: a full owner or a full
 * global pool throws {@link CapacityExhaustedError}, which admission and owner retry let through — after one re-check
 * that the rows exist (`restoreMissingPools`), so a purge cannot fake "full" — and the API maps to
 * `429 capacity_exhausted` with `Retry-After: retryAfterSeconds`.
 * @throws {CapacityExhaustedError} when the owner or the global pool is full; the caller's transaction must roll back.
 * @throws {Error} should the global slot be taken under its lock (an invariant broken); nothing is kept.
 */
export async function reserveAdmission(tx: TxContext, skipLocked: boolean, pools: AdmissionPools, operationId: string): Promise<void> {
  if (!(await incrementActive(tx, pools.owner, pools.owner.limit))) throw new CapacityExhaustedError('owner', pools.retryAfterSeconds);
  const global = await findFreeSlot(tx, skipLocked, pools.global);
  if (global === undefined) throw new CapacityExhaustedError('global', pools.retryAfterSeconds);
  await takeSlot(tx, pools.global.key, global, operationId);
}

/**
 * Releases capacity in the caller's transaction: `all` at a terminal transition (the global and route slots, the
 * owner's `active` unit), `execution` when an attempt ends without ending the operation (retry wait, lease loss):
 * its route slot. `leftRunning`: the operations were running, so their owners' `running` units go back too. The
 * counters change after the slots and before any turn write (lock order, `owner-capacity.repository.ts`).
 */
export async function releaseCapacity(tx: TxContext, operationIds: readonly string[], scope: 'all' | 'execution', leftRunning: boolean): Promise<void> {
  await releaseSlotsOf(tx, operationIds, scope === 'execution');
  await decrementCounters(tx, operationIds, { active: scope === 'all', running: leftRunning });
}
