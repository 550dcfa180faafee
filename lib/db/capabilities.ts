import { sql, type RawBuilder } from 'kysely';

/** The two databases durable-ops runs on. */
export type DialectName = 'mariadb' | 'sqlite';

/**
 * Everything that differs between MariaDB and SQLite, declared once and chosen at start-up
 * (after pg-boss's backend profiles; docs/design.md §10). Services never branch on the dialect themselves.
 */
export interface Capabilities {
  readonly dialect: DialectName;
  /** `SELECT … FOR UPDATE SKIP LOCKED` is available (MariaDB 10.6+). SQLite has one writer and needs none. */
  readonly skipLocked: boolean;
  /**
   * `SELECT … FOR UPDATE` takes row locks (MariaDB). SQLite has no row locks and no `FOR UPDATE`, and needs none: the
   * store runs one transaction at a time on its connection, and a transaction of another connection that read before a
   * concurrent commit fails its first write with `SQLITE_BUSY_SNAPSHOT` (transient: `inTransaction` runs it again).
   */
  readonly rowLocks: boolean;
  /**
   * The hot steps run as stored procedures, one round trip each (MariaDB: the routines the migrations create, listed
   * in docs/design.md §9). SQLite has none: the same decisions run in-process, statement by statement.
   */
  readonly serverRoutines: boolean;
  /**
   * SQL for "the database clock plus `deltaMs`", as a value comparable with stored timestamps.
   * MariaDB: `UTC_TIMESTAMP(6)` — the database clock is the authority for leases and deadlines (docs/design.md §3).
   * SQLite: `strftime('%Y-%m-%d %H:%M:%f','now')`, the one local process's clock, millisecond precision.
   */
  timeAt(deltaMs: number): RawBuilder<string>;
  /** The driver error is a unique-index violation (MariaDB 1062 `ER_DUP_ENTRY`, SQLite `SQLITE_CONSTRAINT_UNIQUE`). */
  isDuplicateKey(error: unknown): boolean;
  /**
   * The driver error is transient and the whole transaction may be retried: MariaDB deadlock (1213), lock wait
   * timeout (1205), "record has changed" (1020, MariaDB 11.6+ snapshot isolation); SQLite `SQLITE_BUSY`.
   */
  isTransient(error: unknown): boolean;
  /**
   * The driver error says a stored procedure is not there or not granted (MariaDB 1305 `ER_SP_DOES_NOT_EXIST`, 1370
   * `ER_PROCACCESS_DENIED_ERROR`): between a deploy and its migration, or before `infra/schema-user.sql` granted
   * `EXECUTE`. SQLite: never.
   */
  isRoutineUnavailable(error: unknown): boolean;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

function errorErrno(error: unknown): number | undefined {
  if (typeof error === 'object' && error !== null && 'errno' in error) {
    const errno = (error as { errno: unknown }).errno;
    return typeof errno === 'number' ? errno : undefined;
  }
  return undefined;
}

/** Capabilities of MariaDB 10.6+ through mysql2. */
export const mariadbCapabilities: Capabilities = Object.freeze({
  dialect: 'mariadb',
  skipLocked: true,
  rowLocks: true,
  serverRoutines: true,
  timeAt: (deltaMs: number) =>
    sql<string>`DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ${Math.round(deltaMs * 1000)} MICROSECOND)`,
  isDuplicateKey: (error: unknown) => errorErrno(error) === 1062 || errorCode(error) === 'ER_DUP_ENTRY',
  isTransient: (error: unknown) => [1213, 1205, 1020].includes(errorErrno(error) ?? 0),
  isRoutineUnavailable: (error: unknown) => [1305, 1370].includes(errorErrno(error) ?? 0),
} satisfies Capabilities);

/** Capabilities of SQLite through better-sqlite3. */
export const sqliteCapabilities: Capabilities = Object.freeze({
  dialect: 'sqlite',
  skipLocked: false,
  rowLocks: false,
  serverRoutines: false,
  timeAt: (deltaMs: number) => {
    const modifier = `${deltaMs < 0 ? '-' : '+'}${(Math.abs(deltaMs) / 1000).toFixed(3)} seconds`;
    return sql<string>`strftime('%Y-%m-%d %H:%M:%f', 'now', ${modifier})`;
  },
  isDuplicateKey: (error: unknown) =>
    errorCode(error) === 'SQLITE_CONSTRAINT_UNIQUE' || errorCode(error) === 'SQLITE_CONSTRAINT_PRIMARYKEY',
  isTransient: (error: unknown) => (errorCode(error) ?? '').startsWith('SQLITE_BUSY'),
  isRoutineUnavailable: () => false,
} satisfies Capabilities);
