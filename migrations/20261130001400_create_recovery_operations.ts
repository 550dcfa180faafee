import type { CreateTableBuilder, Kysely } from 'kysely';
import { sql } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * The durable recovery ledger's operations (docs/design.md §8): the intent of an external effect, committed before the effect.
 * `fence` grows on every claim or takeover; `chain_head_hash` and `checkpoint_count` pin the end of its hash chain.
 */
const TEXT: ReadonlyArray<readonly [string, 'char' | 'varchar', number, boolean]> = [
  ['id', 'char', 36, false],
  ['module', 'varchar', 64, false],
  ['kind', 'varchar', 64, false],
  ['idempotency_key', 'varchar', 128, false],
  ['request_hash', 'char', 64, false],
  ['effect_class', 'varchar', 32, false],
  ['recovery_plan', 'varchar', 2048, false],
  ['precondition_evidence', 'varchar', 8192, false],
  ['state', 'varchar', 32, false],
  ['lease_owner', 'varchar', 128, true],
  ['chain_head_hash', 'char', 64, false],
];

export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  let table: CreateTableBuilder<'recovery_operations', string> = db.schema.createTable('recovery_operations');
  for (const [name, kind, max, nullable] of TEXT) {
    table = table.addColumn(name, kind === 'char' ? t.char(max) : t.varchar(max), (c) => {
      let column = name === 'id' ? c.primaryKey() : nullable ? c : c.notNull();
      if (!t.mariadb) column = column.check(lengthCheck(name, max));
      return column;
    });
  }
  await table
    .addColumn('fence', t.int(), (c) => c.notNull().check(sql.raw('fence >= 1')))
    .addColumn('checkpoint_count', t.int(), (c) => c.notNull().check(sql.raw('checkpoint_count BETWEEN 0 AND 100000')))
    .addColumn('lease_expires_at', t.datetime())
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addColumn('updated_at', t.datetime(), (c) => c.notNull())
    .addUniqueConstraint('recovery_operations_key_uq', ['module', 'idempotency_key'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recovery_operations').execute();
}
