import { expect } from 'vitest';
import type { Store } from '../../lib/db/store.js';
import { ACTIVE_STATUSES } from '../../lib/operations/lifecycle/operation-status.js';

/**
 * Asserts the capacity invariant (docs/design.md §4): every active operation holds exactly one global slot (and, while
 * running on a limited route, one route slot), no slot is held by anything else, and every owner's counters
 * (`owner_capacity`) count exactly its active and its running operations of the task type.
 */
export async function expectCapacityMatchesActive(store: Store): Promise<void> {
  const operations = await store.db.selectFrom('operations').select(['id', 'status', 'task_type', 'owner_user_id']).execute();
  const statusOf = new Map(operations.map((o) => [o.id, o.status]));
  const held = await store.db.selectFrom('capacity_slots').select(['pool_key', 'operation_id']).where('operation_id', 'is not', null).execute();
  const kindsOf = new Map<string, string[]>();
  for (const slot of held) {
    const holder = slot.operation_id as string;
    const status = statusOf.get(holder);
    const kind = slot.pool_key.split(':')[0] as string;
    expect(status, `slot ${slot.pool_key} held by missing operation ${holder}`).toBeDefined();
    expect(['global', 'route'], `slot ${slot.pool_key}: per-owner capacity is a counter, not slot rows`).toContain(kind);
    if (kind === 'route') expect(status, `route slot ${slot.pool_key} held by ${status} operation`).toBe('running');
    else expect(ACTIVE_STATUSES, `slot ${slot.pool_key} held by ${status} operation`).toContain(status);
    kindsOf.set(holder, [...(kindsOf.get(holder) ?? []), kind]);
  }
  const truth = new Map<string, { active: number; running: number }>();
  for (const operation of operations) {
    if (!ACTIVE_STATUSES.includes(operation.status)) continue;
    expect((kindsOf.get(operation.id) ?? []).filter((k) => k !== 'route'), `global slot of active operation ${operation.id}`).toEqual(['global']);
    const key = `${operation.task_type}:${operation.owner_user_id}`;
    const counts = truth.get(key) ?? { active: 0, running: 0 };
    truth.set(key, { active: counts.active + 1, running: counts.running + (operation.status === 'running' ? 1 : 0) });
  }
  const counters = await store.db.selectFrom('owner_capacity').selectAll().execute();
  const counted = new Map(counters.map((row) => [`${row.task_type}:${row.owner_user_id}`, { active: Number(row.active), running: Number(row.running) }]));
  for (const [key, counts] of truth) expect(counted.get(key), `owner_capacity of ${key}`).toEqual(counts);
  for (const [key, counts] of counted) if (!truth.has(key)) expect(counts, `owner_capacity of ${key}, which has nothing active`).toEqual({ active: 0, running: 0 });
}

/**
 * Capacity held under `prefix`, in the pool names of the capacity view: slots held in the slot pools whose key starts
 * with it (`global:`, `route:`), plus the owners' counters whose view key does (`owner:<task type>:<owner>` counts the
 * pair's `active`, `running:<task type>:<owner>` its `running`); `''` counts everything.
 */
export async function heldCapacity(store: Store, prefix: string): Promise<number> {
  const row = await store.db
    .selectFrom('capacity_slots')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('pool_key', 'like', `${prefix}%`)
    .where('operation_id', 'is not', null)
    .executeTakeFirst();
  let held = Number(row?.n ?? 0);
  for (const counter of await store.db.selectFrom('owner_capacity').selectAll().execute()) {
    if (`owner:${counter.task_type}:${counter.owner_user_id}`.startsWith(prefix)) held += Number(counter.active);
    if (`running:${counter.task_type}:${counter.owner_user_id}`.startsWith(prefix)) held += Number(counter.running);
  }
  return held;
}
