import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connectAdmin } from './mariadb-server.js';
import { inject } from 'vitest';
import { migrateToLatest } from '../../lib/db/migrate.js';
import { openStore, type Store } from '../../lib/db/store.js';

/**
 * The implementations of the hot steps (docs/design.md §9) that a conformance suite runs the same cases on: the
 * server-side routines (MariaDB) and the in-process statements (SQLite; MariaDB with its routines off, the path some
 * task types take there).
 */
export const IMPLEMENTATIONS: ReadonlyArray<{ readonly name: string; readonly dialect: TestDialect; readonly routines: boolean }> = [
  { name: 'SQLite, in-process', dialect: 'sqlite', routines: false },
  { name: 'MariaDB, in-process', dialect: 'mariadb', routines: false },
  { name: 'MariaDB, stored procedures', dialect: 'mariadb', routines: true },
];

/**
 * The store with its server routines on or off: a store object of its own, so per-store state (group commits, pools
 * seen complete) starts empty.
 */
export function withRoutines(store: Store, routines: boolean): Store {
  return { ...store, caps: { ...store.caps, serverRoutines: routines } };
}

/** The databases every shared store suite runs on. */
export const DIALECTS = ['sqlite', 'mariadb'] as const;
export type TestDialect = (typeof DIALECTS)[number];

/** The test time seam: milliseconds added to the database clock in every time expression. */
export class TestClock {
  offsetMs = 0;
  /** Moves the database clock forward by `ms`. */
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** A migrated database of its own for one test file. */
export interface TestDatabase {
  readonly dialect: TestDialect;
  readonly store: Store;
  readonly clock: TestClock;
  /** `DATABASE_URL` of this database (for processes the test starts). */
  readonly url: string;
  /** Destroys the store and drops the database. */
  drop(): Promise<void>;
}

/** True when the run has a MariaDB (always under CI=true, see global-setup.ts). */
export function hasMariadb(): boolean {
  return inject('mariadbAdminUrl') !== '';
}

async function adminQuery(adminUrl: string, statement: string): Promise<void> {
  const connection = await connectAdmin(adminUrl);
  try {
    await connection.query(statement);
  } finally {
    await connection.end();
  }
}

/**
 * Creates a fresh database (MariaDB: `CREATE DATABASE dop_<random>`; SQLite: a temp file), migrates it, and
 * returns a store whose clock the test controls.
 */
export async function createTestDatabase(dialect: TestDialect, options: { migrate?: boolean; poolSize?: number } = {}): Promise<TestDatabase> {
  const clock = new TestClock();
  const name = `dop_${randomBytes(6).toString('hex')}`;
  let url: string;
  let dropDatabase: () => Promise<void>;
  if (dialect === 'mariadb') {
    const adminUrl = inject('mariadbAdminUrl');
    if (!adminUrl) throw new Error('No MariaDB for this run');
    await adminQuery(adminUrl, `CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`);
    url = new URL(name, adminUrl).toString();
    dropDatabase = () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
  } else {
    const dir = mkdtempSync(`${tmpdir()}/durable-ops-sqlite-`);
    url = `sqlite:${dir}/${name}.sqlite`;
    dropDatabase = async () => rmSync(dir, { recursive: true, force: true });
  }
  const store = openStore(url, { clockOffsetMs: () => clock.offsetMs, poolSize: options.poolSize ?? 20 });
  if (options.migrate !== false) await migrateToLatest(store);
  return {
    dialect,
    store,
    clock,
    url,
    drop: async () => {
      await store.destroy();
      await dropDatabase();
    },
  };
}
