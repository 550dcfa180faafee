import type { CreateTableBuilder, Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Idempotency keys answered with another, already active operation (docs/design.md §2: a feature producer reuses the active
 * operation of a subject). The key is bound to that operation, so a replay of the same click answers it again instead
 * of starting new work once it has finished. Deleted with its operation by the sweeper's purge.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const bounded = (name: string, n: number, kind: 'char' | 'varchar') => [name, kind === 'char' ? t.char(n) : t.varchar(n), n] as const;
  let table: CreateTableBuilder<'operation_key_aliases', string> = db.schema.createTable('operation_key_aliases');
  for (const [name, type, max] of [
    bounded('owner_user_id', 128, 'varchar'),
    bounded('task_type', 64, 'varchar'),
    bounded('idempotency_key', 128, 'varchar'),
    bounded('request_hash', 64, 'char'),
    bounded('operation_id', 36, 'char'),
  ]) {
    table = table.addColumn(name, type, (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck(name, max))));
  }
  await table
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addPrimaryKeyConstraint('operation_key_aliases_pk', ['owner_user_id', 'task_type', 'idempotency_key'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('operation_key_aliases').execute();
}
