import { randomInt } from 'node:crypto';
import { MysqlAdapter, sql } from 'kysely';
import type { DbContext, TxContext } from '../../db/database.js';
import { byPairKey } from '../../db/key-order.js';

/**
 * SQL for `owner_turns`, the fair claim order's queue of owners (docs/design.md §4, fair share); the decisions are in
 * `fair-claim.ts` and `transitions.ts`. One row per (task type, owner) that may have claimable work: `ready_at` —
 * nothing of the pair is due before it (a lower bound), `served_at` — its last claim (or pass at its limit),
 * `work_seq` — bumped whenever the pair becomes ready again.
 */

/** `served_at` of a pair never claimed for: before every real claim, so a newcomer is served first. */
const NEVER_SERVED = '1970-01-01 00:00:00.000';

/**
 * The first `work_seq` of a new `owner_turns` row: a random 47-bit value, never a fixed one, so a claim still holding
 * the seq it read from a deleted row does not find it again on the row that replaced it.
 */
export function newTurnSeed(): number {
  return randomInt(2 ** 47);
}

/** One (task type, owner) pair as the claim reads it. */
export interface OwnerTurn {
  readonly taskType: string;
  readonly ownerUserId: string;
  readonly servedAt: string;
  /** The row's `work_seq` when read: {@link retireTurn} applies only while it is unchanged. */
  readonly workSeq: number;
}

function isMariadb(ctx: DbContext): boolean {
  return ctx.db.getExecutor().adapter instanceof MysqlAdapter;
}

/**
 * Makes the (task type, owner) pairs of the listed operations ready from their `available_at` on: inserts the pair
 * (never served) or lowers its `ready_at`, and bumps `work_seq` — one `INSERT … SELECT … GROUP BY` upsert (MariaDB
 * `ON DUPLICATE KEY UPDATE`, SQLite `ON CONFLICT DO UPDATE`) in the caller's transaction, which has just moved the
 * operations into a claimable state. Rows are upserted in key order (the `GROUP BY`), so concurrent movers lock them
 * in the same order.
 */
export async function markOwnersReady(ctx: TxContext, operationIds: readonly string[]): Promise<void> {
  if (operationIds.length === 0) return;
  const ids = sql.join(operationIds);
  const seed = newTurnSeed();
  if (isMariadb(ctx)) {
    await sql`INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
      SELECT task_type, owner_user_id, MIN(available_at), ${NEVER_SERVED}, ${seed} FROM operations
      WHERE id IN (${ids}) AND available_at IS NOT NULL GROUP BY task_type, owner_user_id
      ON DUPLICATE KEY UPDATE ready_at = LEAST(owner_turns.ready_at, VALUES(ready_at)), work_seq = owner_turns.work_seq + 1`.execute(ctx.db);
    return;
  }
  await sql`INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
    SELECT task_type, owner_user_id, MIN(available_at), ${NEVER_SERVED}, ${seed} FROM operations
    WHERE id IN (${ids}) AND available_at IS NOT NULL GROUP BY task_type, owner_user_id
    ON CONFLICT (task_type, owner_user_id) DO UPDATE SET ready_at = min(owner_turns.ready_at, excluded.ready_at), work_seq = owner_turns.work_seq + 1`.execute(ctx.db);
}

/** Where a page of {@link selectReadyTurns} starts: after this pair of the same task type in turn order. */
export interface TurnCursor {
  readonly servedAt: string;
  readonly ownerUserId: string;
}

/**
 * Up to `limit` pairs of one task type whose `ready_at` has come, least recently served first (ties by owner), after
 * `after` when given: one range of `owner_turns_type_turn_idx` (task_type, served_at, owner_user_id) in that order —
 * `FORCE INDEX` on MariaDB, whose optimizer read the primary key and sorted on a small table. A plain read, no locks:
 * the claim locks the operations it takes, never the turn rows it reads, so concurrent claimers can serve the same
 * owner (on different rows) instead of finding it locked and idling. Its cost is the turns it returns plus those of the
 * type it passes over whose `ready_at` is still ahead (owners waiting only for a retry's time).
 */
export async function selectReadyTurns(ctx: DbContext, taskType: string, limit: number, after?: TurnCursor): Promise<OwnerTurn[]> {
  const afterCursor = after
    ? sql`AND (served_at > ${after.servedAt} OR (served_at = ${after.servedAt} AND owner_user_id > ${after.ownerUserId}))`
    : sql``;
  const from = isMariadb(ctx) ? sql`owner_turns FORCE INDEX (owner_turns_type_turn_idx)` : sql`owner_turns`;
  const { rows } = await sql<{ owner_user_id: string; served_at: string; work_seq: number | string }>`
    SELECT owner_user_id, served_at, work_seq FROM ${from}
    WHERE task_type = ${taskType} AND ready_at <= ${ctx.timeAt()} ${afterCursor}
    ORDER BY served_at, owner_user_id LIMIT ${limit}`.execute(ctx.db);
  return rows.map((row) => ({ taskType, ownerUserId: row.owner_user_id, servedAt: String(row.served_at), workSeq: Number(row.work_seq) }));
}

/** Sets `served_at` to now for one pair (an UPDATE by primary key). */
export async function markServed(ctx: TxContext, turn: Pick<OwnerTurn, 'taskType' | 'ownerUserId'>): Promise<void> {
  await ctx.db.updateTable('owner_turns').set({ served_at: ctx.timeAt() }).where('task_type', '=', turn.taskType).where('owner_user_id', '=', turn.ownerUserId).execute();
}

/**
 * After a claim found nothing due for a ready pair: moves its `ready_at` to the earliest `available_at` of its claimable
 * operations still inside their deadline, or deletes the row when there are none — only while `work_seq` is still
 * `turn.workSeq`, so a pair that became ready meanwhile (an admission, a retry) keeps its turn. The earliest time is a
 * plain read that sees rows other claimers hold locked (they stay claimable until those claimers commit). Its cost is
 * the pair's claimable rows, read only when none of them is due.
 */
export async function retireTurn(ctx: TxContext, turn: OwnerTurn): Promise<void> {
  const now = ctx.timeAt();
  const next = await ctx.db
    .selectFrom('operations')
    .select((eb) => eb.fn.min('available_at').as('next'))
    .where('claim_lane', 'in', ['L', 'X'])
    .where('task_type', '=', turn.taskType)
    .where('owner_user_id', '=', turn.ownerUserId)
    .where('deadline_at', '>', now)
    .executeTakeFirst();
  if (next?.next == null) {
    await ctx.db
      .deleteFrom('owner_turns')
      .where('task_type', '=', turn.taskType)
      .where('owner_user_id', '=', turn.ownerUserId)
      .where('work_seq', '=', turn.workSeq)
      .execute();
    return;
  }
  await ctx.db
    .updateTable('owner_turns')
    .set({ ready_at: next.next })
    .where('task_type', '=', turn.taskType)
    .where('owner_user_id', '=', turn.ownerUserId)
    .where('work_seq', '=', turn.workSeq)
    .execute();
}

/**
 * After the listed operations moved to a terminal state in the caller's transaction: deletes the turn of each of their
 * (task type, owner) pairs that has nothing claimable left (no `claim_lane` `L`/`X` row inside its deadline), so a
 * finished owner's turn does not wait at the front of the claim order until a claim reads it (docs/design.md §4). Per
 * pair, in key order: one read of the pairs' `work_seq` together with the check (one statement, one snapshot), then
 * on MariaDB a lock of each turn still at that `work_seq` (`FOR UPDATE SKIP LOCKED`: a turn another transaction holds —
 * a concurrent completion of the same owner, an admission making it ready — is left to it, never waited for), then
 * the delete. A pair made ready meanwhile (an admission that committed after the read bumped `work_seq`) keeps its
 * turn; one whose admission commits after the delete inserts a fresh row. Its cost is the pairs' claimable rows inside
 * the range `operations_owner_claim_idx` gives (none, typically) and a primary-key lock and delete each.
 */
export async function retireIdleTurns(ctx: TxContext, operationIds: readonly string[]): Promise<void> {
  if (operationIds.length === 0) return;
  const mariadb = isMariadb(ctx);
  const now = ctx.timeAt();
  const claimable = mariadb ? sql`operations d FORCE INDEX (operations_owner_claim_idx)` : sql`operations d`;
  const { rows } = await sql<{ task_type: string; owner_user_id: string; work_seq: number | string }>`
    SELECT t.task_type, t.owner_user_id, t.work_seq
    FROM (SELECT DISTINCT task_type, owner_user_id FROM operations WHERE id IN (${sql.join(operationIds)})) p
    JOIN owner_turns t ON t.task_type = p.task_type AND t.owner_user_id = p.owner_user_id
    WHERE NOT EXISTS (SELECT 1 FROM ${claimable} WHERE d.claim_lane IN ('L', 'X') AND d.task_type = p.task_type
      AND d.owner_user_id = p.owner_user_id AND d.deadline_at > ${now})`.execute(ctx.db);
  const idle = rows.map((row) => ({ taskType: row.task_type, ownerUserId: row.owner_user_id, workSeq: Number(row.work_seq) })).sort(byPairKey);
  for (const turn of idle) {
    const guard = ctx.db.selectFrom('owner_turns').select('work_seq').where('task_type', '=', turn.taskType).where('owner_user_id', '=', turn.ownerUserId).where('work_seq', '=', turn.workSeq);
    if (mariadb && !(await guard.forUpdate().skipLocked().executeTakeFirst())) continue;
    await ctx.db.deleteFrom('owner_turns').where('task_type', '=', turn.taskType).where('owner_user_id', '=', turn.ownerUserId).where('work_seq', '=', turn.workSeq).execute();
  }
}
