import { sql, type Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * `owner_capacity`: one row per (task type, owner) that has admitted — the owner's capacity as two guarded counters
 * (docs/design.md §4): `active`, its operations in an active state (queued, waiting, running; the admission limit
 * `perOwner` bounds it), and `running`, those running now (the running limit `runningPerOwner` bounds it). Every move
 * that changes either count adjusts it in its own transaction; the sweeper reconciles a drifted row with the
 * operations. It replaces the per-owner slot pools of `capacity_slots` (`owner:…` and `running:…`, 10 + 4 rows per
 * owner by default): the global and route pools stay slot rows, where concurrent reservers contend. The indexes on
 * each counter let the capacity view and the sweeper read only the rows holding something. Filled here from the
 * active operations; the old per-owner slot rows are left for a release that may still read them (dropped later).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('owner_capacity')
    .addColumn('task_type', t.varchar(64), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('task_type', 64))))
    .addColumn('owner_user_id', t.varchar(128), (c) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck('owner_user_id', 128))))
    .addColumn('active', t.int(), (c) => c.notNull().check(sql`active >= 0`))
    .addColumn('running', t.int(), (c) => c.notNull().check(sql`running >= 0`))
    .addPrimaryKeyConstraint('owner_capacity_pk', ['task_type', 'owner_user_id'])
    .modifyEnd(t.tableOptions())
    .execute();
  await db.schema.createIndex('owner_capacity_active_idx').on('owner_capacity').column('active').execute();
  await db.schema.createIndex('owner_capacity_running_idx').on('owner_capacity').column('running').execute();
  await sql`INSERT INTO owner_capacity (task_type, owner_user_id, active, running)
    SELECT task_type, owner_user_id, COUNT(*), SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END) FROM operations
    WHERE status IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback', 'running') GROUP BY task_type, owner_user_id`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('owner_capacity').execute();
}
