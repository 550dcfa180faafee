import { sql, type RawBuilder } from 'kysely';
import type { Capabilities } from '../db/capabilities.js';
import type { TxContext } from '../db/database.js';

/**
 * SQL for `admission_buckets` (migration `20261202001100`); the decision is in `admission-rate.ts` (docs/design.md §4,
 * admission rate). One row per (task type, owner): `milli_tokens` left (thousandths of a token) and `refilled_at`, the
 * database-clock instant up to which refill has been credited. Every time here is the database clock (`ctx.timeAt()`,
 * which carries the test clock's offset), never the Node clock.
 */

/** Which bucket: one per task type and owner. */
export interface BucketKey {
  readonly taskType: string;
  readonly ownerUserId: string;
}

/** A bucket row as {@link lockBucket} reads it. */
export interface LockedBucket {
  /** Milli-tokens left as stored, before any refill (0 … 100,000,000). */
  readonly milliTokens: number;
  /**
   * **Microseconds** from `refilled_at` to the database clock's now (in the same statement): whole microseconds on
   * MariaDB, whole milliseconds × 1000 on SQLite (its timestamps have millisecond precision). Negative when the clock
   * is behind `refilled_at` (a clock stepped back).
   */
  readonly elapsedMicros: number;
}

/** The dialect facts these statements depend on. */
export type BucketCaps = Pick<Capabilities, 'dialect' | 'rowLocks'>;

/**
 * Microseconds from `refilled_at` to `now`, computed in SQL: MariaDB `TIMESTAMPDIFF(MICROSECOND, …)`; SQLite julianday
 * arithmetic rounded to whole milliseconds (a julianday double resolves about 0.05 ms today, so rounding recovers the
 * stored millisecond exactly).
 */
function elapsedMicrosSql(caps: BucketCaps, now: RawBuilder<string>): RawBuilder<number | string> {
  return caps.dialect === 'mariadb'
    ? sql<number | string>`TIMESTAMPDIFF(MICROSECOND, refilled_at, ${now})`
    : sql<number | string>`CAST(ROUND((julianday(${now}) - julianday(refilled_at)) * 86400000.0) AS INTEGER) * 1000`;
}

/**
 * Reads the bucket and, on MariaDB, locks it for the caller's transaction (`SELECT … FOR UPDATE`, through the primary
 * key: concurrent admissions of one owner and task type queue here, each seeing the one before it committed). SQLite
 * runs one writer at a time and needs no lock. Undefined when the bucket has no row yet (a full bucket, see
 * {@link insertFullBucket}); under READ COMMITTED a locking read of a missing row takes no gap lock.
 */
export async function lockBucket(ctx: TxContext, caps: BucketCaps, key: BucketKey): Promise<LockedBucket | undefined> {
  const row = await ctx.db
    .selectFrom('admission_buckets')
    .select(['milli_tokens', elapsedMicrosSql(caps, ctx.timeAt()).as('elapsed_us')])
    .where('task_type', '=', key.taskType)
    .where('owner_user_id', '=', key.ownerUserId)
    .$if(caps.rowLocks, (query) => query.forUpdate())
    .executeTakeFirst();
  return row === undefined ? undefined : { milliTokens: Number(row.milli_tokens), elapsedMicros: Number(row.elapsed_us) };
}

/**
 * Creates the bucket full (`milliTokens`, refilled now), or leaves an existing row as it is — and on MariaDB either
 * way holds its row lock for the caller's transaction: `INSERT … ON DUPLICATE KEY UPDATE` takes an exclusive lock on
 * the duplicate row, where `INSERT IGNORE` would take a shared one, and two first admissions that both held a shared
 * lock and then asked for the exclusive one would deadlock. SQLite: `INSERT … ON CONFLICT DO NOTHING`.
 */
export async function insertFullBucket(ctx: TxContext, caps: BucketCaps, key: BucketKey, milliTokens: number): Promise<void> {
  const insert = ctx.db
    .insertInto('admission_buckets')
    .values({ task_type: key.taskType, owner_user_id: key.ownerUserId, milli_tokens: milliTokens, refilled_at: ctx.timeAt() });
  await (caps.dialect === 'mariadb'
    ? insert.onDuplicateKeyUpdate({ milli_tokens: sql<number>`milli_tokens` })
    : insert.onConflict((conflict) => conflict.doNothing())
  ).execute();
}

/**
 * Writes the bucket after a token was taken: `milli_tokens` = `milliTokens` and `refilled_at` moved by
 * `advanceMicros` **microseconds** from its stored value (negative moves it back), in SQL on the stored timestamp — on
 * SQLite rounded up to its whole milliseconds. Returns rows changed (1 for a locked row).
 */
export async function updateBucket(ctx: TxContext, caps: BucketCaps, key: BucketKey, milliTokens: number, advanceMicros: number): Promise<number> {
  let refilledAt: RawBuilder<string>;
  if (caps.dialect === 'mariadb') {
    refilledAt = sql<string>`DATE_ADD(refilled_at, INTERVAL ${advanceMicros} MICROSECOND)`;
  } else {
    const ms = Math.ceil(advanceMicros / 1000);
    refilledAt = sql<string>`strftime('%Y-%m-%d %H:%M:%f', refilled_at, ${`${ms < 0 ? '-' : '+'}${(Math.abs(ms) / 1000).toFixed(3)} seconds`})`;
  }
  const result = await ctx.db
    .updateTable('admission_buckets')
    .set({ milli_tokens: milliTokens, refilled_at: refilledAt })
    .where('task_type', '=', key.taskType)
    .where('owner_user_id', '=', key.ownerUserId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
