import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Job postings, owner-scoped: the raw text an AI feature works on (title, company, description) lives here, never in
 * `operations` (docs/design.md §2), which refer to a job by subject reference only. Bounds in characters; lib/jobs/job-limits.ts
 * holds the same numbers and test/jobs/jobs-schema-bounds.test.ts compares them. The description (20,000 characters,
 * up to 80,000 bytes in utf8mb4) is too long for a MariaDB varchar, so it is a `mediumtext` bounded by a CHECK.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const bounded = (name: string, max: number) => (c: any) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck(name, max)));
  await db.schema
    .createTable('jobs')
    .addColumn('id', t.char(36), (c) => (t.mariadb ? c.primaryKey() : c.primaryKey().check(lengthCheck('id', 36))))
    .addColumn('owner_user_id', t.varchar(128), bounded('owner_user_id', 128))
    .addColumn('title', t.varchar(200), bounded('title', 200))
    .addColumn('company', t.varchar(200), bounded('company', 200))
    .addColumn('description', t.text(20_000), (c) => c.notNull().check(t.charLengthCheck('description', 20_000)))
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addColumn('updated_at', t.datetime(), (c) => c.notNull())
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('jobs').execute();
}
