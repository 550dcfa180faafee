import { sql, type Selectable } from 'kysely';
import type { DbContext, OperationEventsTable, TxContext } from '../../db/database.js';

/**
 * SQL for `operation_events`, the history the triggers on `operations` write (one row per change of an
 * operation's status or attempt). The code only reads and purges it.
 */

/** A row of `operation_events` as read. */
export type OperationEventRow = Selectable<OperationEventsTable>;

/** The last `limit` events of an operation, newest first (`seq` descending; `operation_events_operation_idx`). */
export async function listLatestEventsOf(ctx: DbContext, operationId: string, limit: number): Promise<OperationEventRow[]> {
  return ctx.db.selectFrom('operation_events').selectAll().where('operation_id', '=', operationId).orderBy('seq', 'desc').limit(limit).execute();
}

/** Deletes the events of the listed operations (retention purge, with the operations). Returns rows deleted. */
export async function deleteEventsOf(ctx: TxContext, operationIds: readonly string[]): Promise<number> {
  if (operationIds.length === 0) return 0;
  const result = await ctx.db.deleteFrom('operation_events').where('operation_id', 'in', operationIds).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** One bucket of {@link countEventsPerMinute}: events that reached `to_status` (admissions only, for `queued`). */
export interface MinuteCount {
  /** `YYYY-MM-DD HH:MM`, UTC. */
  readonly minute: string;
  readonly toStatus: string;
  readonly count: number;
}

/** The minute of a stored timestamp, `YYYY-MM-DD HH:MM`: the same text prefix on both dialects. */
const minuteOf = sql<string>`substr(cast(at as char), 1, 16)`;

/**
 * Events since `since` (a database timestamp) that reached one of `toStatuses`, per minute and status — counting a
 * `queued` event only when it is an admission (`from_status` NULL), not an owner retry. Reads
 * `operation_events_status_idx` only: one range per status.
 */
export async function countEventsPerMinute(ctx: DbContext, since: string, toStatuses: readonly string[]): Promise<MinuteCount[]> {
  const rows = await ctx.db
    .selectFrom('operation_events')
    .select([minuteOf.as('minute'), 'to_status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('to_status', 'in', toStatuses as OperationEventsTable['to_status'][])
    .where('at', '>=', since)
    .where((eb) => eb.or([eb('to_status', '<>', 'queued'), eb('from_status', 'is', null)]))
    .groupBy([minuteOf, 'to_status'])
    .execute();
  return rows.map((row) => ({ minute: row.minute, toStatus: row.to_status, count: Number(row.n) }));
}
