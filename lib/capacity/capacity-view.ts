import { z } from 'zod';
import type { Store } from '../db/store.js';
import { findPlansOf } from '../owners/owner-settings.repository.js';
import { DEFAULT_OWNER_SETTINGS } from '../owners/owner-settings.js';
import { countPoolSlots, GLOBAL_POOL_PREFIX, OWNER_POOL_PREFIX, ROUTE_POOL_PREFIX, RUNNING_POOL_PREFIX, type PoolCount } from './capacity.repository.js';
import { mostHeld, runningByTaskType } from './owner-capacity.repository.js';
import type { CapacityPolicy } from './capacity-policy.js';

/**
 * How many owner pools the capacity view lists, and how many running pools: in each kind, those holding the most
 * slots.
 */
export const MAX_OWNER_POOLS = 50;

/**
 * How many task types `runningByTaskType` of the capacity view lists at most (those running the most): a bound, not a
 * cut — task types come from the registry, far fewer.
 */
export const MAX_RUNNING_TASK_TYPES = 100;

/**
 * The kinds of capacity pool (docs/design.md §4): per task type for everyone (`global`), per task type and owner
 * (`owner`: active operations), per execution route (`route`: running attempts), per task type and owner running at
 * once (`running`: the owner's running limit, fair share).
 */
export const POOL_KINDS = ['global', 'owner', 'route', 'running'] as const;

/**
 * One capacity pool as an operator sees it: its key (`global:<task type>`, `owner:<task type>:<owner>`,
 * `route:<route>`, `running:<task type>:<owner>`), its kind, `slots` — its limit under the current configuration (an
 * owner pool: the owner's plan's admission limit; a running pool: the owner's plan's running limit,
 * `CapacityPolicy.runningLimit`) — and `held`, the slots operations hold now (it may exceed `slots` just after a limit
 * was lowered).
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
 * Everyone's running attempts of one task type, summed over every owner's running pool (not only the listed ones):
 * `running` slots held, by `owners` owners (running pools holding at least one slot).
 */
export const RunningTotalViewSchema = z.strictObject({
  taskType: z.string(),
  running: z.number().int().min(0),
  owners: z.number().int().min(0),
});

/** See {@link RunningTotalViewSchema}. */
export type RunningTotalView = z.infer<typeof RunningTotalViewSchema>;

/**
 * Body of `GET /api/ops/capacity`. `pools`, in this order: every global pool in use (by key), every route pool
 * configured or in use (by key), the {@link MAX_OWNER_POOLS} owner pools holding the most slots, then the
 * {@link MAX_OWNER_POOLS} running pools holding the most slots (each of the last two most first, ties by key; a pool
 * holding nothing is not listed). `runningByTaskType`: per task type with anything running, the sum over every
 * running pool (so what the 50 listed running pools leave out still counts), most running first, ties by task type, at
 * most {@link MAX_RUNNING_TASK_TYPES}. Bounded: global pools one per task type, route pools one per route.
 */
export const CapacityViewSchema = z
  .strictObject({ pools: z.array(CapacityPoolViewSchema), runningByTaskType: z.array(RunningTotalViewSchema) })
  .meta({ id: 'CapacityView' });

/** See {@link CapacityViewSchema}. */
export type CapacityView = z.infer<typeof CapacityViewSchema>;

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
 * `capacity` (the running configuration): see {@link CapacityViewSchema}. Six reads, each on its own (no transaction:
 * the totals may differ from the listed pools by claims in between): global pools and route pools (primary-key ranges),
 * the fullest owners and the fullest running owners (a descending range of each `owner_capacity` counter's index),
 * the running totals per task type (the rows running anything, grouped in SQL), and the plans of the listed owners (one
 * read for both kinds). An owner's pools are its counter row; their keys (`owner:<task type>:<owner>`,
 * `running:<task type>:<owner>`) name it as the slot pools once did.
 */
export async function getCapacityView(store: Store, capacity: CapacityPolicy): Promise<CapacityView> {
  const globals = await countPoolSlots(store, GLOBAL_POOL_PREFIX);
  const routes = await countPoolSlots(store, ROUTE_POOL_PREFIX);
  const owners = await mostHeld(store, 'active', MAX_OWNER_POOLS);
  const running = await mostHeld(store, 'running', MAX_OWNER_POOLS);
  const totals = await runningByTaskType(store, MAX_RUNNING_TASK_TYPES);
  const plans = await findPlansOf(store, [...new Set([...owners, ...running].map((row) => row.ownerUserId))]);
  const planOf = (ownerUserId: string) => plans.get(ownerUserId) ?? DEFAULT_OWNER_SETTINGS.plan;
  return {
    pools: [
      ...globals.map((pool): CapacityPoolView => {
        const taskType = pool.poolKey.slice(GLOBAL_POOL_PREFIX.length);
        // The global limit of a task type is the same whatever the plan.
        return { poolKey: pool.poolKey, kind: 'global', slots: capacity.admissionLimits(taskType, DEFAULT_OWNER_SETTINGS.plan).global, held: pool.held };
      }),
      ...routePools(routes, capacity),
      ...owners.map(({ taskType, ownerUserId, active }): CapacityPoolView => ({
        poolKey: `${OWNER_POOL_PREFIX}${taskType}:${ownerUserId}`,
        kind: 'owner',
        slots: capacity.admissionLimits(taskType, planOf(ownerUserId)).perOwner,
        held: active,
      })),
      ...running.map(({ taskType, ownerUserId, running: held }): CapacityPoolView => ({
        poolKey: `${RUNNING_POOL_PREFIX}${taskType}:${ownerUserId}`,
        kind: 'running',
        slots: capacity.runningLimit(taskType, planOf(ownerUserId)),
        held,
      })),
    ],
    runningByTaskType: totals,
  };
}
