import type { Selectable } from 'kysely';
import type { DbContext, OperationNotificationsTable, TxContext } from '../../db/database.js';
import type { ListPosition } from './operation.repository.js';
import { TERMINAL_STATUSES } from '../lifecycle/operation-status.js';

/** A row of `operation_notifications` as read. */
export type NotificationRow = Selectable<OperationNotificationsTable>;

/**
 * Writes the terminal notification of each listed operation from its current row, in one
 * `INSERT … SELECT`, inside the transaction that made it terminal. The primary key (operation_id, cycle) makes a
 * second notification for the same transition a duplicate-key error, which rolls the transition back.
 * Returns rows inserted.
 */
export async function insertTerminalNotifications(ctx: TxContext, operationIds: readonly string[]): Promise<number> {
  if (operationIds.length === 0) return 0;
  const result = await ctx.db
    .insertInto('operation_notifications')
    .columns(['operation_id', 'owner_user_id', 'task_type', 'status', 'failure_code', 'cycle', 'created_at'])
    .expression((eb) =>
      eb
        .selectFrom('operations')
        .select(['id', 'owner_user_id', 'task_type', 'status', 'failure_code', 'retry_count', ctx.timeAt().as('created_at')])
        .where('id', 'in', operationIds)
        .where('status', 'in', TERMINAL_STATUSES),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/** The owner's notifications, newest first, after the keyset position (`id` is the operation id). */
export async function listOwnerNotifications(
  ctx: DbContext,
  ownerUserId: string,
  limit: number,
  after?: ListPosition & { readonly cycle: number },
): Promise<NotificationRow[]> {
  let select = ctx.db.selectFrom('operation_notifications').selectAll().where('owner_user_id', '=', ownerUserId);
  if (after) {
    select = select.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('operation_id', '<', after.id)]),
        eb.and([eb('created_at', '=', after.createdAt), eb('operation_id', '=', after.id), eb('cycle', '<', after.cycle)]),
      ]),
    );
  }
  return select.orderBy('created_at', 'desc').orderBy('operation_id', 'desc').orderBy('cycle', 'desc').limit(limit).execute();
}

/** Deletes the notifications of the listed operations (retention purge). Returns rows deleted. */
export async function deleteNotificationsOf(ctx: TxContext, operationIds: readonly string[]): Promise<number> {
  if (operationIds.length === 0) return 0;
  const result = await ctx.db.deleteFrom('operation_notifications').where('operation_id', 'in', operationIds).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The last `limit` notifications of one operation, newest cycle first (a primary-key range). */
export async function listLatestNotificationsOf(ctx: DbContext, operationId: string, limit: number): Promise<NotificationRow[]> {
  return ctx.db.selectFrom('operation_notifications').selectAll().where('operation_id', '=', operationId).orderBy('cycle', 'desc').limit(limit).execute();
}
