import { sql, type Selectable } from 'kysely';
import type { DbContext, OperationKeyAliasesTable, TxContext } from '../../db/database.js';

/**
 * SQL for `operation_key_aliases`: idempotency keys a feature producer answered with an already active operation
 * (docs/design.md §2, Idempotency), so the same key replays that operation later instead of admitting new work.
 */

/** A row of `operation_key_aliases` as read. */
export type KeyAliasRow = Selectable<OperationKeyAliasesTable>;

/**
 * Binds `key` to an existing operation. Relies on the primary key (owner, task type, key): a concurrent binding of the
 * same key throws the driver's duplicate-key error, which the caller resolves as a replay.
 */
export async function insertKeyAlias(tx: TxContext, alias: Omit<KeyAliasRow, 'created_at'>): Promise<void> {
  await tx.db.insertInto('operation_key_aliases').values({ ...alias, created_at: tx.timeAt() }).execute();
}

/** The alias of this owner's key for this task type, if any. */
export async function findKeyAlias(ctx: DbContext, ownerUserId: string, taskType: string, key: string, latest = false): Promise<KeyAliasRow | undefined> {
  return ctx.db
    .selectFrom('operation_key_aliases')
    .selectAll()
    .where('owner_user_id', '=', ownerUserId)
    .where('task_type', '=', taskType)
    .where('idempotency_key', '=', key)
    .$if(latest, (select) => select.modifyEnd(sql`LOCK IN SHARE MODE`))
    .executeTakeFirst();
}

/** Deletes the aliases of the listed operations (the purge, before it deletes them). Returns rows deleted. */
export async function deleteKeyAliasesOf(tx: TxContext, operationIds: readonly string[]): Promise<number> {
  if (operationIds.length === 0) return 0;
  const result = await tx.db.deleteFrom('operation_key_aliases').where('operation_id', 'in', operationIds).executeTakeFirst();
  return Number(result.numDeletedRows);
}
