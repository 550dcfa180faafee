import { expect } from 'vitest';
import type { Store } from '../../lib/db/store.js';
import { ACTIVE_STATUSES } from '../../lib/operations/lifecycle/operation-status.js';

/**
 * Asserts the capacity invariant (docs/design.md §4): every active operation holds exactly one owner slot and one global slot,
 * every running operation exactly one running slot of its owner (and of its route, on a limited one), and no slot is
 * held by anything else.
 */
export async function expectCapacityMatchesActive(store: Store): Promise<void> {
  const operations = await store.db.selectFrom('operations').select(['id', 'status']).execute();
  const statusOf = new Map(operations.map((o) => [o.id, o.status]));
  const held = await store.db.selectFrom('capacity_slots').select(['pool_key', 'operation_id']).where('operation_id', 'is not', null).execute();
  const kindsOf = new Map<string, string[]>();
  for (const slot of held) {
    const holder = slot.operation_id as string;
    const status = statusOf.get(holder);
    const kind = slot.pool_key.split(':')[0] as string;
    expect(status, `slot ${slot.pool_key} held by missing operation ${holder}`).toBeDefined();
    if (kind === 'route' || kind === 'running') expect(status, `${kind} slot ${slot.pool_key} held by ${status} operation`).toBe('running');
    else expect(ACTIVE_STATUSES, `slot ${slot.pool_key} held by ${status} operation`).toContain(status);
    kindsOf.set(holder, [...(kindsOf.get(holder) ?? []), kind]);
  }
  for (const operation of operations) {
    if (!ACTIVE_STATUSES.includes(operation.status)) continue;
    const kinds = (kindsOf.get(operation.id) ?? []).filter((k) => k !== 'route').sort();
    expect(kinds, `admission and running slots of active operation ${operation.id}`).toEqual(operation.status === 'running' ? ['global', 'owner', 'running'] : ['global', 'owner']);
  }
}

/** Slots held in pools whose key starts with `prefix`. */
export async function heldSlots(store: Store, prefix: string): Promise<number> {
  const row = await store.db
    .selectFrom('capacity_slots')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('pool_key', 'like', `${prefix}%`)
    .where('operation_id', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
