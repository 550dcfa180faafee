import type { Selectable } from 'kysely';
import type { DbContext, OwnerSettingsTable } from '../db/database.js';

/** SQL for `owner_settings`, one statement per function. */

/** A row of `owner_settings` as read. */
export type OwnerSettingsRow = Selectable<OwnerSettingsTable>;

/** The owner's settings row, if any. */
export async function findOwnerSettings(ctx: DbContext, ownerUserId: string): Promise<OwnerSettingsRow | undefined> {
  return ctx.db.selectFrom('owner_settings').selectAll().where('owner_user_id', '=', ownerUserId).executeTakeFirst();
}

/** Inserts a settings row; throws the driver's duplicate-key error when one exists. */
export async function insertOwnerSettings(ctx: DbContext, row: Omit<OwnerSettingsRow, 'updated_at'>): Promise<void> {
  await ctx.db.insertInto('owner_settings').values({ ...row, updated_at: ctx.timeAt() }).execute();
}

/** Updates the given columns of an existing settings row. Returns rows changed (0 when there is no row). */
export async function updateOwnerSettings(
  ctx: DbContext,
  ownerUserId: string,
  changes: Partial<Omit<OwnerSettingsRow, 'owner_user_id' | 'updated_at'>>,
): Promise<number> {
  const result = await ctx.db
    .updateTable('owner_settings')
    .set({ ...changes, updated_at: ctx.timeAt() })
    .where('owner_user_id', '=', ownerUserId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The plans of those of the listed owners who have a settings row (one `IN` read), by owner id. */
export async function findPlansOf(ctx: DbContext, ownerUserIds: readonly string[]): Promise<Map<string, string>> {
  if (ownerUserIds.length === 0) return new Map();
  const rows = await ctx.db.selectFrom('owner_settings').select(['owner_user_id', 'plan']).where('owner_user_id', 'in', ownerUserIds).execute();
  return new Map(rows.map((row) => [row.owner_user_id, row.plan]));
}
