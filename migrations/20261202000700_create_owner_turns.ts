import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * `owner_turns`: one row per (task type, owner) that may have claimable work — the fair claim order's queue of owners
 * (docs/design.md §4, fair share). `ready_at`: no claimable operation of the pair is due before it (a lower bound:
 * admission and every move into a claimable state lower it; a claim that finds nothing due raises it or deletes the
 * row). `served_at`: when the pair was last claimed for (`1970-01-01` until then) — the claim serves the least
 * recently served first. `work_seq`: bumped by every move that makes the pair ready, so a claim's raise or delete
 * applies only if nothing became ready since it looked. Filled here from the claimable operations already queued.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('owner_turns')
    .addColumn('task_type', t.varchar(64), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('task_type', 64))))
    .addColumn('owner_user_id', t.varchar(128), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('owner_user_id', 128))))
    .addColumn('ready_at', t.datetime(), (c) => c.notNull())
    .addColumn('served_at', t.datetime(), (c) => c.notNull())
    .addColumn('work_seq', t.mariadb ? sql.raw('bigint') : sql.raw('integer'), (c) => c.notNull())
    .addPrimaryKeyConstraint('owner_turns_pk', ['task_type', 'owner_user_id'])
    .modifyEnd(t.tableOptions())
    .execute();
  await db.schema.createIndex('owner_turns_turn_idx').on('owner_turns').columns(['served_at', 'task_type', 'owner_user_id']).execute();
  await sql`INSERT INTO owner_turns (task_type, owner_user_id, ready_at, served_at, work_seq)
    SELECT task_type, owner_user_id, MIN(available_at), '1970-01-01 00:00:00.000000', 1 FROM operations
    WHERE claim_lane IS NOT NULL AND available_at IS NOT NULL GROUP BY task_type, owner_user_id`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('owner_turns').execute();
}
