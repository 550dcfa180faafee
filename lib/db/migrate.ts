import { Migrator, NO_MIGRATIONS, type MigrationResult } from 'kysely';
import { staticMigrationProvider } from '../../migrations/index.js';
import type { Store } from './store.js';

/** What one migration run did: each migration's name, direction and status, in order. */
export type MigrationReport = readonly MigrationResult[];

/**
 * A migration run that may have failed part-way: every migration it tried, in order (the failing one with status
 * `Error`, those after it `NotExecuted`), and the error that stopped it. `results` is empty when the run failed before
 * any migration was tried (no connection, the migration lock, the bookkeeping tables).
 */
export interface MigrationOutcome {
  readonly results: MigrationReport;
  /** What stopped the run; absent when every pending migration succeeded. */
  readonly error?: unknown;
}

function migrator(store: Store): Migrator {
  return new Migrator({ db: store.db, provider: staticMigrationProvider });
}

function unwrap(result: { error?: unknown; results?: MigrationResult[] }): MigrationReport {
  if (result.error) throw result.error;
  return result.results ?? [];
}

/**
 * Applies every pending migration. MariaDB has no transactional DDL, so each migration is one DDL change: a
 * failure leaves the schema at the last whole migration (docs/design.md §9).
 * @throws the first migration error.
 */
export async function migrateToLatest(store: Store): Promise<MigrationReport> {
  return unwrap(await migrator(store).migrateToLatest());
}

/**
 * Like {@link migrateToLatest}, but a failure is returned with the results so far instead of thrown, so a caller can
 * report which migration failed (the migrate Lambda, `functions/migrate.ts`). Never throws for a migration or
 * connection failure.
 */
export async function tryMigrateToLatest(store: Store): Promise<MigrationOutcome> {
  try {
    const { error, results } = await migrator(store).migrateToLatest();
    return error === undefined ? { results: results ?? [] } : { results: results ?? [], error };
  } catch (error) {
    return { results: [], error };
  }
}

/**
 * Rolls every migration back (`down` in reverse order). Destroys all operation history: see README
 * "Rollback" before using it outside tests.
 * @throws the first migration error.
 */
export async function migrateAllDown(store: Store): Promise<MigrationReport> {
  return unwrap(await migrator(store).migrateTo(NO_MIGRATIONS));
}
