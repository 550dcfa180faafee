import { Migrator, NO_MIGRATIONS, type MigrationResult } from 'kysely';
import { staticMigrationProvider } from '../../migrations/index.js';
import type { Store } from './store.js';

/** What one migration run did: each migration's name, direction and status, in order. */
export type MigrationReport = readonly MigrationResult[];

function migrator(store: Store): Migrator {
  return new Migrator({ db: store.db, provider: staticMigrationProvider });
}

function unwrap(result: { error?: unknown; results?: MigrationResult[] }): MigrationReport {
  if (result.error) throw result.error;
  return result.results ?? [];
}

/**
 * Applies every pending migration. MariaDB has no transactional DDL, so each migration is one DDL change: a
 * failure leaves the schema at the last whole migration (STYLE §16).
 * @throws the first migration error.
 */
export async function migrateToLatest(store: Store): Promise<MigrationReport> {
  return unwrap(await migrator(store).migrateToLatest());
}

/**
 * Rolls every migration back (`down` in reverse order). Destroys all operation history: see README
 * "Rollback" before using it outside tests.
 * @throws the first migration error.
 */
export async function migrateAllDown(store: Store): Promise<MigrationReport> {
  return unwrap(await migrator(store).migrateTo(NO_MIGRATIONS));
}
