import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connectAdmin } from './mariadb-server.js';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { migrateToLatest } from '../../lib/db/migrate.js';
import type { Database } from '../../lib/db/database.js';
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

/** The tables an operation suite empties before each case: operations and everything an operation holds. */
export const OPERATION_TABLES = ['operation_notifications', 'operation_events', 'operations', 'capacity_slots', 'owner_capacity', 'owner_turns'] as const;

/** One implementation's database inside a `describe.each(IMPLEMENTATIONS)` block (see {@link implementationDatabase}). */
export interface ImplementationDatabase {
  /** True when the implementation is MariaDB and the run has none: every case of the block is skipped. */
  readonly skip: boolean;
  /** The test database (from `beforeAll` on). */
  readonly t: TestDatabase;
  /** This case's store: a store object of its own, with the implementation's routines on or off. */
  readonly store: Store;
}

/**
 * Registers the hooks of a conformance block for `implementation`: the database created in `beforeAll` (then `setup`,
 * e.g. an application's own table) and dropped in `afterAll`; before each case `tables` emptied, the test clock set
 * back to the database's own, and a fresh {@link ImplementationDatabase.store}. Call it first in the block, so the
 * block's own `beforeEach` runs after it.
 */
export function implementationDatabase(
  implementation: { readonly dialect: TestDialect; readonly routines: boolean },
  options: { readonly tables?: readonly (keyof Database)[]; readonly poolSize?: number; readonly setup?: (t: TestDatabase) => Promise<void> } = {},
): ImplementationDatabase {
  const skip = implementation.dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase | undefined;
  let store: Store | undefined;
  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(implementation.dialect, options.poolSize === undefined ? {} : { poolSize: options.poolSize });
    await options.setup?.(t);
  });
  afterAll(async () => t?.drop());
  beforeEach(async () => {
    if (!t) return;
    store = withRoutines(t.store, implementation.routines);
    for (const table of options.tables ?? OPERATION_TABLES) await store.db.deleteFrom(table).execute();
    t.clock.offsetMs = 0;
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not there yet (skipped, or read outside a case)`);
    return value;
  };
  return {
    skip,
    get t() {
      return ready(t, 'The test database');
    },
    get store() {
      return ready(store, "The case's store");
    },
  };
}
