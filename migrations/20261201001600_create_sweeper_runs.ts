import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * One row per sweeper run (the operator console's sweep list): when it started and finished (database clock,
 * UTC) and its counts as JSON (`SweepCounts`, at most 1024 characters). Written at the end of every `runSweepOnce`,
 * which also deletes rows older than 7 days, a bounded batch per run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('sweeper_runs')
    .addColumn('id', t.mariadb ? sql.raw('bigint') : sql.raw('integer'), (c) => c.primaryKey().autoIncrement())
    .addColumn('started_at', t.datetime(), (c) => c.notNull())
    .addColumn('finished_at', t.datetime(), (c) => c.notNull())
    .addColumn('counts', t.varchar(1024), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('counts', 1024))))
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sweeper_runs').execute();
}
