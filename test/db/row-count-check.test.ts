import { Kysely, MysqlDialect, sql } from 'kysely';
import { createPool } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mariadbCapabilities } from '../../lib/db/capabilities.js';
import type { Database } from '../../lib/db/database.js';
import { assertMatchedRowCounts } from '../../lib/db/row-count-check.js';
import type { Store } from '../../lib/db/store.js';
import { ConfigError } from '../../lib/errors.js';
import { createTestDatabase, hasMariadb, type TestDatabase } from '../support/test-store.js';

describe('the store refuses a MariaDB connection whose row counts are not matched rows', () => {
  const skip = !hasMariadb();
  let t: TestDatabase;
  let withoutFlag: Kysely<Database>;

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase('mariadb');
    const url = new URL(t.url);
    // A pool built elsewhere, without CLIENT_FOUND_ROWS: UPDATEs report changed rows.
    const pool = createPool({ host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username || 'root'), password: decodeURIComponent(url.password), database: url.pathname.slice(1), flags: ['-FOUND_ROWS'], connectionLimit: 2 });
    withoutFlag = new Kysely<Database>({ dialect: new MysqlDialect({ pool }) });
  });
  afterAll(async () => {
    await withoutFlag?.destroy();
    await t?.drop();
  });

  it.skipIf(skip)('the store as opened counts matched rows, and passes', async () => {
    await expect(assertMatchedRowCounts(t.store)).resolves.toBeUndefined();
  });

  it.skipIf(skip)('a connection without CLIENT_FOUND_ROWS is refused with a ConfigError that says why', async () => {
    const store: Store = { ...t.store, db: withoutFlag, caps: mariadbCapabilities };
    const refused = assertMatchedRowCounts(store);
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(/CLIENT_FOUND_ROWS/);
  });

  it.skipIf(skip)('on that connection an UPDATE writing the values a row already has reports 0 rows: the guard would misread', async () => {
    const result = await sql`UPDATE kysely_migration SET name = name ORDER BY name LIMIT 1`.execute(withoutFlag);
    expect(Number(result.numAffectedRows)).toBe(0);
  });
});
