import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAllDown, migrateToLatest } from '../lib/db/migrate.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from './support/test-store.js';

describe.each(DIALECTS)('migrations on %s', (dialect) => {
  let t: TestDatabase;
  beforeAll(async () => {
    if (dialect === 'mariadb' && !hasMariadb()) return;
    t = await createTestDatabase(dialect, { migrate: false });
  });
  afterAll(async () => t?.drop());

  it.skipIf(dialect === 'mariadb' && !hasMariadb())('run up → down → up and leave the schema usable', async () => {
    const first = await migrateToLatest(t.store);
    expect(first.every((r) => r.status === 'Success')).toBe(true);
    expect(first.length).toBeGreaterThan(0);
    const down = await migrateAllDown(t.store);
    expect(down.map((r) => r.direction)).toEqual(first.map(() => 'Down'));
    const tables = await t.store.db.introspection.getTables();
    expect(tables.map((x) => x.name).filter((n) => !n.startsWith('kysely_'))).toEqual([]);
    const again = await migrateToLatest(t.store);
    expect(again.map((r) => r.migrationName)).toEqual(first.map((r) => r.migrationName));
    const now = await sql<{ now: string }>`select ${t.store.timeAt()} as now`.execute(t.store.db);
    expect(now.rows[0]?.now).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}/);
  });
});
