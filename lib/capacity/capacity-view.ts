import { z } from 'zod';
import type { Store } from '../db/store.js';
import { findPlansOf } from '../owners/owner-settings.repository.js';
import { DEFAULT_OWNER_SETTINGS } from '../owners/owner-settings.js';
import { countPoolSlots, GLOBAL_POOL_PREFIX, mostHeldPools, OWNER_POOL_PREFIX, ROUTE_POOL_PREFIX, type PoolCount } from './capacity.repository.js';
import type { CapacityPolicy } from './capacity-policy.js';

/** How many owner pools the capacity view lists: those holding the most slots. */
export const MAX_OWNER_POOLS = 50;

/** The kinds of capacity pool (docs/design.md §4): per task type for everyone, per task type and owner, per execution route. */
export const POOL_KINDS = ['global', 'owner', 'route'] as const;

/**
 * One capacity pool as an operator sees it: its key (`global:<task type>`, `owner:<task type>:<owner>`,
 * `route:<route>`), its kind, `slots` — its limit under the current configuration (an owner pool: the owner's plan's) —
 * and `held`, the slots operations hold now (it may exceed `slots` just after a limit was lowered).
 */
export const CapacityPoolViewSchema = z.strictObject({
  poolKey: z.string(),
  kind: z.enum(POOL_KINDS),
  slots: z.number().int().min(0),
  held: z.number().int().min(0),
});

/** See {@link CapacityPoolViewSchema}. */
export type CapacityPoolView = z.infer<typeof CapacityPoolViewSchema>;

/**
 * Body of `GET /api/ops/capacity`: every global pool in use (by key), every route pool configured or in use
 * (by key), then the {@link MAX_OWNER_POOLS} owner pools holding the most slots (most first, ties by key; an owner pool
 * holding nothing is not listed).
 */
export const CapacityViewSchema = z.strictObject({ pools: z.array(CapacityPoolViewSchema) }).meta({ id: 'CapacityView' });

/** See {@link CapacityViewSchema}. */
export type CapacityView = z.infer<typeof CapacityViewSchema>;

/** `<task type>` and `<owner>` of an owner pool key (a task type never holds a `:`). */
function ownerPoolParts(poolKey: string): { taskType: string; ownerUserId: string } {
  const rest = poolKey.slice(OWNER_POOL_PREFIX.length);
  const colon = rest.indexOf(':');
  return { taskType: rest.slice(0, colon), ownerUserId: rest.slice(colon + 1) };
}

/** Every configured route, with the pools in use that the configuration no longer names, by key. */
function routePools(inUse: readonly PoolCount[], capacity: CapacityPolicy): CapacityPoolView[] {
  const counts = new Map(inUse.map((pool) => [pool.poolKey, pool]));
  const keys = new Set([...Object.keys(capacity.routes).map((route) => `${ROUTE_POOL_PREFIX}${route}`), ...counts.keys()]);
  return [...keys].sort().map((poolKey) => {
    const pool = counts.get(poolKey);
    const slots = capacity.routeLimit(poolKey.slice(ROUTE_POOL_PREFIX.length)) ?? pool?.slotRows ?? 0;
    return { poolKey, kind: 'route', slots, held: pool?.held ?? 0 };
  });
}

/**
 * The capacity pools and how full they are (docs/design.md §4; operators only: the route needs `ops:read`), with limits from
 * `capacity` (the running configuration): see {@link CapacityViewSchema}. Four reads: global pools and route pools
 * (primary-key ranges), the fullest owner pools (held slots only), and those owners' plans.
 */
export async function getCapacityView(store: Store, capacity: CapacityPolicy): Promise<CapacityView> {
  const globals = await countPoolSlots(store, GLOBAL_POOL_PREFIX);
  const routes = await countPoolSlots(store, ROUTE_POOL_PREFIX);
  const owners = await mostHeldPools(store, OWNER_POOL_PREFIX, MAX_OWNER_POOLS);
  const plans = await findPlansOf(store, [...new Set(owners.map((pool) => ownerPoolParts(pool.poolKey).ownerUserId))]);
  return {
    pools: [
      ...globals.map((pool): CapacityPoolView => {
        const taskType = pool.poolKey.slice(GLOBAL_POOL_PREFIX.length);
        // The global limit of a task type is the same whatever the plan.
        return { poolKey: pool.poolKey, kind: 'global', slots: capacity.admissionLimits(taskType, DEFAULT_OWNER_SETTINGS.plan).global, held: pool.held };
      }),
      ...routePools(routes, capacity),
      ...owners.map((pool): CapacityPoolView => {
        const { taskType, ownerUserId } = ownerPoolParts(pool.poolKey);
        const plan = plans.get(ownerUserId) ?? DEFAULT_OWNER_SETTINGS.plan;
        return { poolKey: pool.poolKey, kind: 'owner', slots: capacity.admissionLimits(taskType, plan).perOwner, held: pool.held };
      }),
    ],
  };
}
