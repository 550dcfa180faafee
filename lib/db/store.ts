import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, type RawBuilder } from 'kysely';
import { BoundedSqliteDialect } from './bounded-sqlite-dialect.js';
import { UnavailableTranslatingMysqlDialect } from './unavailable-translating-mysql-dialect.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createPool } from 'mysql2';
import { ConfigError } from '../errors.js';
import { requireOptionalPeer } from '../optional-peer.js';
import { mariadbCapabilities, sqliteCapabilities, type Capabilities } from './capabilities.js';
import type { Database } from './database.js';

/**
 * A connected database: the kysely instance, the dialect's capabilities, and the one seam through which
 * "now" enters SQL.
 */
export interface Store {
  readonly db: Kysely<Database>;
  readonly caps: Capabilities;
  /**
   * SQL for the database clock plus `deltaMs` (and plus the test clock offset, if any). Every lease,
   * deadline and retry time is computed with this, inside the statement (docs/design.md §3).
   */
  timeAt(deltaMs?: number): RawBuilder<string>;
  /**
   * The test clock offset that {@link timeAt} adds, in **ms** (0 outside tests): the same seam for server-side routines,
   * which take it as a parameter and compute "now" themselves.
   */
  clockOffsetMs(): number;
  /**
   * A store whose writes never run inside a caller's open transaction (docs/design.md §8: recovery checkpoints go through an
   * independent connection). MariaDB: this store itself — every statement outside a transaction takes its own pooled
   * connection. SQLite: a second connection to the same file with `busy_timeout = 0`, so a write while another
   * connection holds the write lock fails at once with `SQLITE_BUSY` instead of waiting.
   * @throws {ConfigError} for an in-memory SQLite database, which no second connection can open.
   */
  independent(): Store;
  /** Closes the pool / file handle (and the independent connection, if one was opened). */
  destroy(): Promise<void>;
}

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /**
   * Milliseconds added to the database clock in every time expression. Tests move time through this one
   * seam instead of sleeping. @default () => 0
   */
  clockOffsetMs?: () => number;
  /** mysql2 pool size. Size it for one Lambda (1–2) or one local process. @default 10 */
  poolSize?: number;
  /**
   * SQLite: how long a statement waits for the store's one connection, in ms, before `StoreConnectionBusyError`.
   * @default SQLITE_CONNECTION_WAIT_MS (30,000)
   */
  sqliteConnectionWaitMs?: number;
}

/** A parsed `DATABASE_URL`. */
export type DatabaseTarget =
  | {
      readonly kind: 'mariadb';
      readonly url: string;
      readonly database: string;
      /** `?ssl=true`: connect over TLS and verify the server certificate (RDS Proxy with `RequireTLS`). */
      readonly tls: boolean;
    }
  | { readonly kind: 'sqlite'; readonly path: string };

/**
 * Parses `DATABASE_URL`: `mysql://user:pass@host:port/db[?ssl=true]` or `mariadb://…` for MariaDB;
 * `sqlite:<path>`, `file:<path>` or `sqlite::memory:` for SQLite.
 * @throws {ConfigError} for any other form, a MariaDB URL without a database name, or an `ssl` other than
 * `true`/`false` (the value is never echoed: the URL holds a password).
 */
export function parseDatabaseUrl(value: string): DatabaseTarget {
  if (/^(mysql|mariadb):\/\//.test(value)) {
    const url = new URL(value);
    const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
    if (!database) throw new ConfigError('DATABASE_URL must name a database, e.g. mysql://root@127.0.0.1:3306/durable_ops');
    const ssl = url.searchParams.get('ssl');
    if (ssl !== null && ssl !== 'true' && ssl !== 'false') throw new ConfigError('DATABASE_URL ssl must be true or false');
    return { kind: 'mariadb', url: value, database, tls: ssl === 'true' };
  }
  const sqlite = /^(?:sqlite|file):(.+)$/.exec(value);
  if (sqlite?.[1]) return { kind: 'sqlite', path: sqlite[1] };
  throw new ConfigError('DATABASE_URL must start with mysql://, mariadb://, sqlite: or file:');
}

/**
 * Opens a {@link Store} for `DATABASE_URL`. Nothing is migrated here (see `migrateToLatest`).
 *
 * MariaDB connections are configured so driver types match the row types: UTC (`timezone: 'Z'`,
 * session `time_zone = '+00:00'`), READ COMMITTED sessions, `dateStrings` (timestamps stay strings with microseconds), strict SQL mode
 * (over-long strings are errors, never silently truncated), utf8mb4; over verified TLS with `?ssl=true`. A driver error
 * meaning the database is unavailable (refused, reset, lost, too many connections, shutdown) surfaces as
 * `DatabaseUnavailableError` (`UnavailableTranslatingMysqlDialect`).
 *
 * SQLite has one connection, which a transaction holds until it ends; a statement waits for it at most
 * `SQLITE_CONNECTION_WAIT_MS` (30 s) and then fails with `StoreConnectionBusyError` instead of waiting for good — a
 * call on the store from inside a transaction on it would wait for itself.
 *
 * SQLite goes through `better-sqlite3`, an optional peer dependency of the package: it is loaded only here, when a SQLite
 * URL is opened, so an application on MariaDB (every Lambda) never installs or loads the native addon.
 * @throws {ConfigError} when the URL is not understood.
 * @throws {OptionalDependencyMissingError} for a SQLite URL when `better-sqlite3` is not installed.
 */
export function openStore(databaseUrl: string, options: OpenStoreOptions = {}): Store {
  const target = parseDatabaseUrl(databaseUrl);
  const offset = options.clockOffsetMs ?? (() => 0);
  if (target.kind === 'mariadb') {
    const url = new URL(target.url);
    const pool = createPool({
      host: url.hostname,
      port: url.port ? Number(url.port) : 3306,
      user: decodeURIComponent(url.username || 'root'),
      password: decodeURIComponent(url.password),
      database: target.database,
      connectionLimit: options.poolSize ?? 10,
      timezone: 'Z',
      dateStrings: true,
      charset: 'utf8mb4',
      supportBigNumbers: true,
      bigNumberStrings: false,
      // Affected rows mean *matched* rows, which every guarded UPDATE's row-count check relies on (mysql2 sets it by
      // default; pinned here so the meaning never rests on a driver default). `assertMatchedRowCounts` checks it.
      flags: ['FOUND_ROWS'],
      // TLS 1.2+ with the certificate checked against Node's CA bundle: RDS Proxy endpoints present ACM certificates
      // (Amazon Root CA), so no CA file is needed (Amazon RDS User Guide, "Using TLS/SSL with RDS Proxy").
      ...(target.tls ? { ssl: { rejectUnauthorized: true, minVersion: 'TLSv1.2' } } : {}),
    });
    pool.on('connection', (connection) => {
      // READ COMMITTED for the whole session (see `inTransaction`): set once here, not per transaction, which saved a
      // round trip per transaction.
      connection.query(
        "SET SESSION time_zone = '+00:00', SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ENGINE_SUBSTITUTION', SESSION tx_isolation = 'READ-COMMITTED'",
      );
    });
    const db = new Kysely<Database>({ dialect: new UnavailableTranslatingMysqlDialect({ pool }) });
    return buildStore(db, mariadbCapabilities, offset);
  }
  // Loaded only when SQLite is asked for (and before any directory is made), so a Lambda bundle (MariaDB only) never
  // needs the native addon.
  const Sqlite = requireOptionalPeer<typeof BetterSqlite3>('better-sqlite3', 'SQLite');
  if (target.path !== ':memory:') mkdirSync(dirname(target.path), { recursive: true });
  const open = (busyTimeoutMs: number) => {
    const database = new Sqlite(target.path);
    database.pragma('journal_mode = WAL');
    database.pragma(`busy_timeout = ${busyTimeoutMs}`);
    database.pragma('foreign_keys = ON');
    return new Kysely<Database>({ dialect: new BoundedSqliteDialect({ database }, options.sqliteConnectionWaitMs) });
  };
  let independent: Store | undefined;
  const openIndependent = () => {
    if (target.path === ':memory:') throw new ConfigError('An in-memory SQLite database has no independent connection; use a file.');
    independent ??= buildStore(open(0), sqliteCapabilities, offset);
    return independent;
  };
  const main = open(5000);
  return buildStore(main, sqliteCapabilities, offset, openIndependent, async () => {
    await independent?.destroy();
    await main.destroy();
  });
}

function buildStore(
  db: Kysely<Database>,
  caps: Capabilities,
  offset: () => number,
  independent?: () => Store,
  destroy: () => Promise<void> = () => db.destroy(),
): Store {
  const store: Store = {
    db,
    caps,
    timeAt: (deltaMs = 0) => caps.timeAt(deltaMs + offset()),
    clockOffsetMs: offset,
    independent: () => (independent ? independent() : store),
    destroy,
  };
  return store;
}
