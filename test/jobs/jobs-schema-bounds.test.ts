import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FieldLimits } from '../../lib/validation/field-limits.js';
import { JobLimits } from '../../lib/jobs/job-limits.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

/** Text columns of `jobs` and `ai_workspace_notes` and the bound (characters) zod or the callers enforce for each. */
const BOUNDS = {
  jobs: { owner_user_id: FieldLimits.ownerUserId, title: JobLimits.title, company: JobLimits.company, description: JobLimits.description },
  ai_workspace_notes: { owner_user_id: FieldLimits.ownerUserId, note_kind: JobLimits.noteKind, content_json: JobLimits.noteContentJson },
} as const;

type Table = keyof typeof BOUNDS;

/** Multi-byte characters: the bound counts characters (code points), never bytes or UTF-16 units. */
const UNITS = [
  ['ASCII', 'x'],
  ['CJK', '職'],
  ['emoji', '😀'],
] as const;

function validRow(table: Table, overrides: Record<string, unknown> = {}) {
  const now = '2026-01-01 00:00:00.000';
  const common = { id: '00000000-0000-4000-8000-000000000000', owner_user_id: 'o', created_at: now, updated_at: now };
  const row =
    table === 'jobs'
      ? { ...common, title: 't', company: 'c', description: 'd' }
      : { ...common, job_id: '00000000-0000-4000-8000-000000000001', note_kind: 'k', content_json: '{}', operation_id: '00000000-0000-4000-8000-000000000002' };
  return { ...row, ...overrides };
}

describe.each(DIALECTS)('jobs and workspace notes are bounded on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip).each(UNITS)(
    'the schema stores every text column at its bound intact in %s, and refuses one character more',
    async (_name, unit) => {
      for (const [table, columns] of Object.entries(BOUNDS) as Array<[Table, Record<string, number>]>) {
        for (const [column, max] of Object.entries(columns)) {
          await t.store.db.deleteFrom(table).execute();
          const atBound = unit.repeat(max);
          await t.store.db.insertInto(table).values(validRow(table, { [column]: atBound }) as never).execute();
          const stored = await t.store.db.selectFrom(table).select(column as never).executeTakeFirstOrThrow();
          expect((stored as Record<string, string>)[column] === atBound, `${table}.${column} must store ${max} × ${unit} intact`).toBe(true);
          await t.store.db.deleteFrom(table).execute();
          await expect(
            t.store.db.insertInto(table).values(validRow(table, { [column]: unit.repeat(max + 1) }) as never).execute(),
            `${table}.${column} must refuse ${max + 1} × ${unit}`,
          ).rejects.toThrow();
        }
      }
    },
  );

  it.skipIf(skip)('a job id and note ids are at most 36 characters', async () => {
    await t.store.db.deleteFrom('jobs').execute();
    await expect(t.store.db.insertInto('jobs').values(validRow('jobs', { id: 'x'.repeat(37) }) as never).execute()).rejects.toThrow();
    for (const column of ['id', 'job_id', 'operation_id']) {
      await t.store.db.deleteFrom('ai_workspace_notes').execute();
      await expect(t.store.db.insertInto('ai_workspace_notes').values(validRow('ai_workspace_notes', { [column]: 'x'.repeat(37) }) as never).execute(), column).rejects.toThrow();
    }
  });
});

describe.skipIf(!hasMariadb())('MariaDB column types of jobs and workspace notes', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  const columnsOf = async (table: string) => {
    const rows = await sql<{ COLUMN_NAME: string; COLUMN_TYPE: string; IS_NULLABLE: string }>`
      select COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE from information_schema.COLUMNS
      where TABLE_SCHEMA = database() and TABLE_NAME = ${table}`.execute(t.store.db);
    return Object.fromEntries(rows.rows.map((r) => [r.COLUMN_NAME, `${r.COLUMN_TYPE}${r.IS_NULLABLE === 'NO' ? ' not null' : ''}`]));
  };

  it('declares the bounds in DDL: varchar/char, mediumtext for the 80,000-byte description, text for note JSON, datetime(6)', async () => {
    expect(await columnsOf('jobs')).toEqual({
      id: 'char(36) not null',
      owner_user_id: 'varchar(128) not null',
      title: `varchar(${JobLimits.title}) not null`,
      company: `varchar(${JobLimits.company}) not null`,
      description: 'mediumtext not null',
      created_at: 'datetime(6) not null',
      updated_at: 'datetime(6) not null',
    });
    expect(await columnsOf('ai_workspace_notes')).toEqual({
      id: 'char(36) not null',
      owner_user_id: 'varchar(128) not null',
      job_id: 'char(36) not null',
      note_kind: `varchar(${JobLimits.noteKind}) not null`,
      content_json: 'text not null',
      operation_id: 'char(36) not null',
      created_at: 'datetime(6) not null',
      updated_at: 'datetime(6) not null',
    });
  });

  it('both tables use utf8mb4_nopad_bin, like every other table', async () => {
    const rows = await sql<{ TABLE_NAME: string; TABLE_COLLATION: string; ENGINE: string }>`
      select TABLE_NAME, TABLE_COLLATION, ENGINE from information_schema.TABLES
      where TABLE_SCHEMA = database() and TABLE_NAME in ('jobs', 'ai_workspace_notes', 'operations') order by TABLE_NAME`.execute(t.store.db);
    expect(rows.rows.map((r) => [r.TABLE_NAME, r.TABLE_COLLATION, r.ENGINE])).toEqual([
      ['ai_workspace_notes', 'utf8mb4_nopad_bin', 'InnoDB'],
      ['jobs', 'utf8mb4_nopad_bin', 'InnoDB'],
      ['operations', 'utf8mb4_nopad_bin', 'InnoDB'],
    ]);
  });

  it('the one-note-per-kind unique key exists', async () => {
    const rows = await sql<{ TABLE_NAME: string; INDEX_NAME: string; NON_UNIQUE: number; COLUMN_NAME: string }>`
      select TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME from information_schema.STATISTICS
      where TABLE_SCHEMA = database() and TABLE_NAME in ('jobs', 'ai_workspace_notes') and INDEX_NAME <> 'PRIMARY'
      order by TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`.execute(t.store.db);
    expect(rows.rows.map((r) => `${r.TABLE_NAME}.${r.INDEX_NAME}${Number(r.NON_UNIQUE) === 0 ? ' unique' : ''}: ${r.COLUMN_NAME}`)).toEqual([
      'ai_workspace_notes.ai_workspace_notes_kind_uq unique: owner_user_id',
      'ai_workspace_notes.ai_workspace_notes_kind_uq unique: job_id',
      'ai_workspace_notes.ai_workspace_notes_kind_uq unique: note_kind',
    ]);
  });
});
