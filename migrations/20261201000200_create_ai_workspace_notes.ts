import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * AI workspace notes: what an AI feature produced for one of an owner's jobs, one note per (owner, job, note kind) —
 * the unique constraint makes a second note of a kind impossible, so a new result replaces the old one in place.
 * `operation_id` names the operation that produced it. `content_json` (16,000 characters, up to 64,000 bytes in
 * utf8mb4) is a MariaDB `text` bounded by a CHECK; lib/jobs/job-limits.ts holds the same numbers.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const bounded = (name: string, max: number) => (c: any) => (t.mariadb ? c.notNull() : c.notNull().check(lengthCheck(name, max)));
  await db.schema
    .createTable('ai_workspace_notes')
    .addColumn('id', t.char(36), (c) => (t.mariadb ? c.primaryKey() : c.primaryKey().check(lengthCheck('id', 36))))
    .addColumn('owner_user_id', t.varchar(128), bounded('owner_user_id', 128))
    .addColumn('job_id', t.char(36), bounded('job_id', 36))
    .addColumn('note_kind', t.varchar(64), bounded('note_kind', 64))
    .addColumn('content_json', t.text(16_000), (c) => c.notNull().check(t.charLengthCheck('content_json', 16_000)))
    .addColumn('operation_id', t.char(36), bounded('operation_id', 36))
    .addColumn('created_at', t.datetime(), (c) => c.notNull())
    .addColumn('updated_at', t.datetime(), (c) => c.notNull())
    .addUniqueConstraint('ai_workspace_notes_kind_uq', ['owner_user_id', 'job_id', 'note_kind'])
    .modifyEnd(t.tableOptions())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ai_workspace_notes').execute();
}
