import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Per-owner settings that admission rechecks live: plan (an entitlement only an operator changes), whether AI work is
 * enabled, and the privacy mode snapshotted onto each operation. An owner without a row has the documented defaults.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const bounded = (name: string, max: number) => (c: any) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck(name, max)));
  await db.schema
    .createTable('owner_settings')
    .addColumn('owner_user_id', t.varchar(128), (c) => (t.mariadb ? c.primaryKey() : c.primaryKey().check(lengthCheck('owner_user_id', 128))))
    .addColumn('plan', t.varchar(32), bounded('plan', 32))
    .addColumn('ai_enabled', t.int(), (c) => c.notNull().check(sql.raw('ai_enabled IN (0, 1)')))
    .addColumn('privacy_mode', t.varchar(32), bounded('privacy_mode', 32))
    .addColumn('updated_at', t.datetime(), (c) => c.notNull())
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('owner_settings').execute();
}
