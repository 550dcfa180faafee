import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FieldLimits } from '../lib/validation/field-limits.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from './support/test-store.js';

/** Text columns of `operations` and the FieldLimits bound zod enforces at the edge for each. */
const TEXT_COLUMNS: Record<string, number> = {
  owner_user_id: FieldLimits.ownerUserId,
  task_type: FieldLimits.taskType,
  idempotency_key: FieldLimits.idempotencyKey,
  subject_type: FieldLimits.subjectType,
  subject_id: FieldLimits.subjectId,
  params_json: FieldLimits.paramsJson,
  progress_stage: FieldLimits.progressStage,
  failure_code: FieldLimits.failureCode,
  failure_message: FieldLimits.failureMessage,
  model_attempts: FieldLimits.modelAttempts,
};

function validRow(overrides: Record<string, unknown> = {}) {
  const now = '2026-01-01 00:00:00.000';
  return {
    id: '00000000-0000-4000-8000-000000000000',
    owner_user_id: 'o',
    task_type: 't',
    idempotency_key: 'k',
    request_hash: 'a'.repeat(64),
    subject_type: 's',
    subject_id: 'i',
    params_json: '{}',
    status: 'queued',
    privacy_mode: 'local_only',
    priority: 0,
    attempt: 0,
    max_attempts: 3,
    retry_count: 0,
    progress_percent: 0,
    deadline_at: now,
    created_at: now,
    updated_at: now,
    ...overrides,
  };
}

describe.each(DIALECTS)('stored fields are bounded on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  beforeAll(async () => {
    if (!skip) t = await createTestDatabase(dialect);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('the schema refuses every string one character longer than the zod bound, and accepts the bound itself', async () => {
    for (const [column, max] of Object.entries(TEXT_COLUMNS)) {
      await t.store.db.deleteFrom('operations').execute();
      await t.store.db.insertInto('operations').values(validRow({ [column]: 'x'.repeat(max) }) as never).execute();
      await t.store.db.deleteFrom('operations').execute();
      await expect(
        t.store.db.insertInto('operations').values(validRow({ [column]: 'x'.repeat(max + 1) }) as never).execute(),
        `${column} must refuse ${max + 1} characters`,
      ).rejects.toThrow();
    }
  });

  it.skipIf(skip)('the schema refuses numbers outside the bounds zod and the registry enforce', async () => {
    const outOfRange: Record<string, number> = {
      progress_percent: FieldLimits.progressPercent.max + 1,
      max_attempts: FieldLimits.maxAttempts.max + 1,
      priority: FieldLimits.priority.max + 1,
      attempt: -1,
    };
    for (const [column, value] of Object.entries(outOfRange)) {
      await t.store.db.deleteFrom('operations').execute();
      await expect(t.store.db.insertInto('operations').values(validRow({ [column]: value }) as never).execute(), column).rejects.toThrow();
    }
  });
});

describe.skipIf(!hasMariadb())('MariaDB column types', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mariadb');
  });
  afterAll(async () => t?.drop());

  it('declares varchar/char with exactly the bounds, datetime(6) and int', async () => {
    const rows = await sql<{ COLUMN_NAME: string; COLUMN_TYPE: string }>`
      select COLUMN_NAME, COLUMN_TYPE from information_schema.COLUMNS
      where TABLE_SCHEMA = database() and TABLE_NAME = 'operations'`.execute(t.store.db);
    const types = Object.fromEntries(rows.rows.map((r) => [r.COLUMN_NAME, r.COLUMN_TYPE]));
    for (const [column, max] of Object.entries(TEXT_COLUMNS)) expect(types[column], column).toBe(`varchar(${max})`);
    expect(types.id).toBe('char(36)');
    expect(types.lease_token).toBe('char(64)');
    expect(types.request_hash).toBe('char(64)');
    expect(types.deadline_at).toBe('datetime(6)');
    expect(types.attempt).toBe('int(11)');
  });
});
