import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * One row per terminal transition of an operation. The primary key (operation_id, cycle) makes a second
 * notification for the same transition impossible: the insert fails and its transaction rolls back.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const bounded = (name: string, max: number) => (c: any) => {
    const column = name === 'failure_code' ? c : c.notNull();
    return t.mariadb ? column : column.check(lengthCheck(name, max));
  };
  await db.schema
    .createTable('operation_notifications')
    .addColumn('operation_id', t.char(36), bounded('operation_id', 36))
    .addColumn('owner_user_id', t.varchar(128), bounded('owner_user_id', 128))
    .addColumn('task_type', t.varchar(64), bounded('task_type', 64))
    .addColumn('status', t.varchar(32), bounded('status', 32))
    .addColumn('failure_code', t.varchar(64), bounded('failure_code', 64))
    .addColumn('cycle', t.int(), (c) => c.notNull())
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addPrimaryKeyConstraint('operation_notifications_pk', ['operation_id', 'cycle'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('operation_notifications').execute();
}
