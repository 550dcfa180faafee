import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * `admission_buckets`: one token bucket per (task type, owner) — the admission rate limit (docs/design.md §4,
 * admission rate). `milli_tokens`: the tokens left, as a whole number of thousandths of a token (one admission spends
 * 1000), at most 100,000 tokens (the largest `burst` the capacity file accepts). `refilled_at`: the database-clock
 * instant up to which refill has been credited (UTC; MariaDB `datetime(6)`, SQLite `YYYY-MM-DD HH:MM:SS.SSS` text).
 *
 * Why an integer of milli-tokens and not a DECIMAL: SQLite has no exact decimal type (a `DECIMAL` column has NUMERIC
 * affinity and stores fractions as REAL), so only integers are exact on both databases; a thousandth of a token is
 * fine enough that rounding refill down loses less than 1/1000 of a token per admission, and never grants one extra.
 *
 * A missing row means a full bucket: admission inserts it on first use. Rows are few (one per owner and rate-limited
 * task type) and small; nothing deletes them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('admission_buckets')
    .addColumn('task_type', t.varchar(64), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('task_type', 64))))
    .addColumn('owner_user_id', t.varchar(128), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('owner_user_id', 128))))
    .addColumn('milli_tokens', t.int(), (c) => c.notNull().check(sql.raw('milli_tokens BETWEEN 0 AND 100000000')))
    .addColumn('refilled_at', t.datetime(), (c) => c.notNull())
    .addPrimaryKeyConstraint('admission_buckets_pk', ['task_type', 'owner_user_id'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('admission_buckets').execute();
}
