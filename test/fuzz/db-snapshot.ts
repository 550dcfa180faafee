import { sql } from 'kysely';
import type { Store } from '../../lib/db/store.js';

/** Every row of every application table, per table, each row as canonical JSON, sorted: comparable with `toEqual`. */
export type DatabaseSnapshot = Record<string, string[]>;

/**
 * The application tables of the store's database, found by introspection (so a table added by a later migration is
 * covered without editing the fuzz suites); kysely's own migration tables are left out.
 */
export async function applicationTables(store: Store): Promise<string[]> {
  const tables = await store.db.introspection.getTables();
  return tables.filter((table) => !table.isView && !table.name.startsWith('kysely_')).map((table) => table.name).sort();
}

function canonical(row: Record<string, unknown>): string {
  return JSON.stringify(Object.keys(row).sort().map((column) => [column, row[column]]));
}

/**
 * Reads every row of `tables` (see {@link applicationTables}). Two snapshots are equal exactly when no row was
 * inserted, updated or deleted in between.
 */
export async function snapshotDatabase(store: Store, tables: readonly string[]): Promise<DatabaseSnapshot> {
  const snapshot: DatabaseSnapshot = {};
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(store.db);
    snapshot[table] = rows.map(canonical).sort();
  }
  return snapshot;
}

/** Deletes every row of `tables` (the schema has no foreign keys, so any order works): a run that starts from nothing. */
export async function emptyTables(store: Store, tables: readonly string[]): Promise<void> {
  for (const table of tables) await sql`delete from ${sql.table(table)}`.execute(store.db);
}
