import { z } from 'zod';
import { ConfigError, DatabaseUnavailableError } from '../errors.js';
import { describeError, type Logger } from '../logger.js';
import { tryMigrateToLatest } from './migrate.js';
import type { Store } from './store.js';

/**
 * The migrate Lambda's contract (docs/design.md §9): invoked with `{}` after each deploy (`durable-ops migrate --remote
 * <function>`), it applies every pending migration with the static migration provider the bundle carries and answers
 * a report. Migrations only go forward in AWS; rolling back is a code rollback (README "Migrations and rollback").
 */

/** Longest `error` summary the function answers, in characters. */
export const MIGRATE_ERROR_MAX_LENGTH = 500;

/** One migration's result, as kysely's `MigrationResult`. */
export const MigrationResultSchema = z
  .object({
    migrationName: z.string().min(1).max(255),
    direction: z.enum(['Up', 'Down']),
    status: z.enum(['Success', 'Error', 'NotExecuted']),
  })
  .strict();

/**
 * What the migrate function answers: every migration the run tried, in order, and — when the run failed — a bounded
 * summary of why (the failing migration's name and the driver's error code; never a stack, SQL text or credential).
 * No pending migration: `{ results: [] }`.
 */
export const MigrateFunctionResultSchema = z
  .object({
    results: z.array(MigrationResultSchema).max(10_000),
    error: z.string().min(1).max(MIGRATE_ERROR_MAX_LENGTH).optional(),
  })
  .strict();

/** The migrate function's answer (see {@link MigrateFunctionResultSchema}). */
export type MigrateFunctionResult = z.infer<typeof MigrateFunctionResultSchema>;

/** The only event the migrate function accepts: `{}` (what Lambda passes for an empty payload). */
export const MigrateFunctionEventSchema = z.object({}).strict();

/** What {@link createMigrateHandler} needs. */
export interface MigrateHandlerDeps {
  /** The database to migrate, built on first need (`lazy`); a rejected build is reported like a failed run. */
  readonly store: () => Promise<Store>;
  /** Where the full error of a failed run goes (CloudWatch in AWS). */
  readonly logger: Logger;
}

const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
const NAME = /^[A-Za-z][A-Za-z0-9_.]{0,63}$/;

/**
 * A bounded, credential-free summary of why a migration run failed: the driver's error code (mysql2 `ER_…` with its
 * `errno`, `ECONNREFUSED`, `ETIMEDOUT`, `HANDSHAKE_NO_SSL_SUPPORT`; better-sqlite3 `SQLITE_…`), else the message of a
 * {@link ConfigError} (which never echoes a value), else the error's class name; for a {@link DatabaseUnavailableError}, that of the driver error it wraps. Driver messages are left out: a
 * parse error quotes SQL, and a connection error names the host.
 */
export function describeMigrationError(failure: unknown, failedMigration?: string): string {
  // The store wraps an outage in DatabaseUnavailableError; the driver's error under it names the code.
  const error = failure instanceof DatabaseUnavailableError && failure.cause !== undefined ? failure.cause : failure;
  const code = (error as { code?: unknown } | null)?.code;
  const errno = (error as { errno?: unknown } | null)?.errno;
  let what: string;
  if (typeof code === 'string' && CODE.test(code)) {
    what = typeof errno === 'number' && Number.isInteger(errno) && errno > 0 ? `${code} (errno ${errno})` : code;
  } else if (error instanceof ConfigError) {
    what = error.message;
  } else {
    what = error instanceof Error && NAME.test(error.name) ? error.name : 'Error';
  }
  const summary = failedMigration ? `${failedMigration} failed: ${what}` : `could not run migrations: ${what}`;
  return summary.length > MIGRATE_ERROR_MAX_LENGTH ? `${summary.slice(0, MIGRATE_ERROR_MAX_LENGTH - 1)}…` : summary;
}

/**
 * Builds the migrate Lambda handler: validates the event (`{}` only), applies every pending migration to the store
 * (`tryMigrateToLatest`; concurrent invocations are serialised by kysely's migration lock) and answers a
 * {@link MigrateFunctionResult}. It never throws: a failed run, an unreachable database or a bad configuration is an
 * answer with `error`, logged in full through `logger`, so the caller gets each migration's result and Lambda never
 * returns a stack trace.
 */
export function createMigrateHandler(deps: MigrateHandlerDeps): (event: unknown) => Promise<MigrateFunctionResult> {
  return async (event) => {
    if (!MigrateFunctionEventSchema.safeParse(event ?? {}).success) {
      return { results: [], error: 'the migrate function takes no input ({}): migrations only go forward in AWS' };
    }
    let store: Store;
    try {
      store = await deps.store();
    } catch (error) {
      deps.logger.error('migrate: could not open the database', describeError(error));
      return { results: [], error: describeMigrationError(error) };
    }
    const outcome = await tryMigrateToLatest(store);
    const results = outcome.results.map(({ migrationName, direction, status }) => ({ migrationName, direction, status }));
    if (outcome.error === undefined) {
      deps.logger.info('migrate: done', { applied: results.length });
      return { results };
    }
    const failedMigration = results.find((r) => r.status === 'Error')?.migrationName;
    deps.logger.error('migrate: run failed', { failedMigration, applied: results.filter((r) => r.status === 'Success').length, ...describeError(outcome.error) });
    return { results, error: describeMigrationError(outcome.error, failedMigration) };
  };
}
