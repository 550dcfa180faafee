import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * The hash-chained checkpoints of recovery operations (docs/design.md §8). `(operation_id, seq)` is the primary key, so a
 * chain position can be written once only; `hash` covers the canonical encoding of the row and `prev_hash`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const text = (name: string, max: number, nullable = false) => (c: any) => {
    const column = nullable ? c : c.notNull();
    return t.mariadb ? column : column.check(lengthCheck(name, max));
  };
  await db.schema
    .createTable('recovery_checkpoints')
    .addColumn('operation_id', t.char(36), text('operation_id', 36))
    .addColumn('seq', t.int(), (c) => c.notNull())
    .addColumn('kind', t.varchar(64), text('kind', 64))
    .addColumn('state', t.varchar(32), text('state', 32))
    .addColumn('fence', t.int(), (c) => c.notNull())
    .addColumn('previous_fence', t.int())
    .addColumn('evidence', t.varchar(8192), text('evidence', 8192))
    .addColumn('prev_hash', t.char(64), text('prev_hash', 64))
    .addColumn('hash', t.char(64), text('hash', 64))
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addPrimaryKeyConstraint('recovery_checkpoints_pk', ['operation_id', 'seq'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recovery_checkpoints').execute();
}
