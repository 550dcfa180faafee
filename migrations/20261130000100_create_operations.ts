import type { CreateTableBuilder, Kysely } from 'kysely';
import { sql } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/** Bounds of the text columns; lib/validation/field-limits.ts holds the same numbers and a test compares them. */
const TEXT_BOUNDS: ReadonlyArray<readonly [string, 'char' | 'varchar', number]> = [
  ['id', 'char', 36],
  ['owner_user_id', 'varchar', 128],
  ['task_type', 'varchar', 64],
  ['idempotency_key', 'varchar', 128],
  ['request_hash', 'char', 64],
  ['subject_type', 'varchar', 64],
  ['subject_id', 'varchar', 128],
  ['params_json', 'varchar', 4096],
  ['status', 'varchar', 32],
  ['privacy_mode', 'varchar', 32],
  ['lease_token', 'char', 64],
  ['progress_stage', 'varchar', 64],
  ['failure_code', 'varchar', 64],
  ['failure_message', 'varchar', 512],
];
const NULLABLE_TEXT = new Set(['lease_token', 'progress_stage', 'failure_code', 'failure_message']);

const INT_BOUNDS: ReadonlyArray<readonly [string, number, number]> = [
  ['priority', -1000, 1000],
  ['attempt', 0, 100],
  ['max_attempts', 1, 100],
  ['retry_count', 0, 1000],
  ['progress_percent', 0, 100],
];

const TIMES: ReadonlyArray<readonly [string, boolean]> = [
  ['lease_expires_at', true],
  ['heartbeat_at', true],
  ['cancel_requested_at', true],
  ['deadline_at', false],
  ['available_at', true],
  ['wake_at', true],
  ['created_at', false],
  ['updated_at', false],
  ['started_at', true],
  ['finished_at', true],
];

export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  let table: CreateTableBuilder<'operations', string> = db.schema.createTable('operations');
  for (const [name, kind, max] of TEXT_BOUNDS) {
    table = table.addColumn(name, kind === 'char' ? t.char(max) : t.varchar(max), (c) => {
      let column = name === 'id' ? c.primaryKey() : NULLABLE_TEXT.has(name) ? c : c.notNull();
      if (!t.mariadb) column = column.check(lengthCheck(name, max));
      return column;
    });
  }
  for (const [name, min, max] of INT_BOUNDS) {
    table = table.addColumn(name, t.int(), (c) => c.notNull().check(sql.raw(`${name} BETWEEN ${min} AND ${max}`)));
  }
  for (const [name, nullable] of TIMES) {
    table = table.addColumn(name, t.datetime(), (c) => (nullable ? c : c.notNull()));
  }
  await table
    .addUniqueConstraint('operations_idempotency_uq', ['owner_user_id', 'task_type', 'idempotency_key'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('operations').execute();
}
