import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Capacity as a fixed set of slot rows per pool (docs/design.md §4). A slot is free when `operation_id` is NULL and held by
 * the named operation otherwise, so an operator can see who holds what. Reserving claims one free slot row with a
 * conditional UPDATE (after `SELECT … FOR UPDATE SKIP LOCKED` on MariaDB): concurrent admissions spread over different
 * rows instead of queueing on one counter row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('capacity_slots')
    .addColumn('pool_key', t.varchar(255), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('pool_key', 255))))
    .addColumn('slot_no', t.int(), (c) => c.notNull().check(sql.raw('slot_no BETWEEN 0 AND 99999')))
    .addColumn('operation_id', t.char(36))
    .addColumn('reserved_at', t.datetime())
    .addPrimaryKeyConstraint('capacity_slots_pk', ['pool_key', 'slot_no'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('capacity_slots').execute();
}
