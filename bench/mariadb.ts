import { createConnection, createPool, type Connection, type Pool, type PoolOptions } from 'mysql2/promise';
import { isAlive, noCleanups, type Cleanups } from './cleanups.js';

/** The MariaDB the benchmark uses when `DATABASE_URL` is not a `mysql://` URL (the test suite's default). */
export const DEFAULT_MARIADB_URL = 'mysql://root@127.0.0.1:3306/test';

/** Every database the benchmark creates is named `durable_ops_bench_<pid>[_suffix]`: it never touches any other. */
const BENCH_DATABASE = /^durable_ops_bench_(\d+)(_[a-z0-9]+)?$/;

/**
 * The server URL (`mysql://user:pass@host:port/`, no database) of `DATABASE_URL` when it is a `mysql://` or
 * `mariadb://` URL, else of {@link DEFAULT_MARIADB_URL}. The database named in it is never used.
 */
export function mariadbServerUrl(databaseUrl: string | undefined = process.env.DATABASE_URL): string {
  const source = databaseUrl && /^(mysql|mariadb):\/\//.test(databaseUrl) ? databaseUrl : DEFAULT_MARIADB_URL;
  const url = new URL(source.replace(/^mariadb:/, 'mysql:'));
  url.pathname = '/';
  url.search = '';
  return url.toString();
}

/** Host, port and credentials of a `mysql://` URL, as mysql2 options. */
function serverOf(mysqlUrl: string): { host: string; port: number; user: string; password: string } {
  const url = new URL(mysqlUrl);
  return { host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username || 'root'), password: decodeURIComponent(url.password) };
}

/** Opens one connection to the server of `serverUrl`, optionally on `database`. */
export function connect(serverUrl: string, database?: string): Promise<Connection> {
  return createConnection({ ...serverOf(serverUrl), ...(database ? { database } : {}), timezone: 'Z', dateStrings: true, multipleStatements: false });
}

/**
 * A mysql2 promise pool of `connectionLimit` connections on the database of `databaseUrl` (`mysql://…/<database>`),
 * with `extra` driver options.
 */
export function benchPool(databaseUrl: string, connectionLimit: number, extra: PoolOptions = {}): Pool {
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  return createPool({ ...serverOf(databaseUrl), database, connectionLimit, ...extra });
}

/** Runs one statement on a fresh connection and returns its rows. */
export async function adminQuery<T = Record<string, unknown>>(serverUrl: string, statement: string, values: unknown[] = []): Promise<T[]> {
  const connection = await connect(serverUrl);
  try {
    const [rows] = await connection.query(statement, values);
    return rows as T[];
  } finally {
    await connection.end();
  }
}

/** A server status counter (`SHOW GLOBAL STATUS LIKE <name>`, server-wide) as a number; 0 when the server has none. */
export async function globalStatus(connection: Connection, name: string): Promise<number> {
  const [rows] = await connection.query('SHOW GLOBAL STATUS LIKE ?', [name]);
  return Number((rows as { Value: unknown }[])[0]?.Value ?? 0);
}

/** A database the benchmark created; `drop()` removes it (idempotent). */
export interface BenchDatabase {
  readonly name: string;
  /** `DATABASE_URL` of the database. */
  readonly url: string;
  drop(): Promise<void>;
}

/** The name of this process's benchmark database with an optional `suffix` (lower-case letters and digits). */
export function benchDatabaseName(suffix?: string): string {
  return `durable_ops_bench_${process.pid}${suffix ? `_${suffix}` : ''}`;
}

/**
 * Creates an empty benchmark database (dropping a leftover of the same name first), with the character set and
 * collation the test suite uses.
 * @throws {Error} when `name` is not a benchmark database name.
 */
export async function createBenchDatabase(serverUrl: string, name: string): Promise<BenchDatabase> {
  if (!BENCH_DATABASE.test(name)) throw new Error(`Refusing to create ${name}: not a durable_ops_bench_<pid> name`);
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS \`${name}\``);
  await adminQuery(serverUrl, `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`);
  let dropped = false;
  return {
    name,
    url: new URL(name, serverUrl).toString(),
    drop: async () => {
      if (dropped) return;
      dropped = true;
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS \`${name}\``);
    },
  };
}

/**
 * Drops benchmark databases left behind by runs whose process is gone (killed before its cleanup ran). Databases of
 * live processes, and every database not named `durable_ops_bench_<pid>…`, are left alone. Returns the names dropped.
 */
export async function dropStaleBenchDatabases(serverUrl: string): Promise<string[]> {
  const rows = await adminQuery<{ name: string }>(serverUrl, "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'durable\\_ops\\_bench\\_%'");
  const dropped: string[] = [];
  for (const { name } of rows) {
    const pid = Number(BENCH_DATABASE.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS \`${name}\``);
    dropped.push(name);
  }
  return dropped;
}

/** The server version string (`SELECT VERSION()`). */
export async function mariadbVersion(serverUrl: string): Promise<string> {
  const [row] = await adminQuery<{ v: string }>(serverUrl, 'SELECT VERSION() AS v');
  return row?.v ?? 'unknown';
}

/** Server-wide commit counters at one instant. */
export interface CommitCounters {
  /** InnoDB read-write transactions committed (`INNODB_METRICS.trx_rw_commits`): autocommit writes count one each. */
  readonly rwCommits: number;
  /** Explicit `COMMIT` statements (`Com_commit`). */
  readonly comCommit: number;
  /**
   * Statements clients sent (`Questions`: one per round trip, `BEGIN` and `COMMIT` included, a trigger's statements
   * not), server-wide.
   */
  readonly statements: number;
}

/**
 * Reads the server's commit counters. `trx_rw_commits` is an InnoDB monitor counter, off by default: `open` switches
 * it on (`SET GLOBAL innodb_monitor_enable`) if it was off, and `close` switches it off again. Both counters are
 * server-wide: commits by other clients during a measurement inflate them (see {@link ForeignActivityProbe}).
 */
export class CommitCounter {
  readonly #connection: Connection;
  readonly #enabledHere: boolean;
  readonly #cleanups: Cleanups;
  private constructor(connection: Connection, enabledHere: boolean, cleanups: Cleanups) {
    this.#connection = connection;
    this.#enabledHere = enabledHere;
    this.#cleanups = cleanups;
  }

  /** Opens a counter; switching the monitor off again is registered in `cleanups` while it is pending. */
  static async open(serverUrl: string, cleanups: Cleanups = noCleanups): Promise<CommitCounter> {
    const connection = await connect(serverUrl);
    const [rows] = await connection.query("SELECT enabled FROM information_schema.INNODB_METRICS WHERE name = 'trx_rw_commits'");
    const enabled = Number((rows as { enabled: unknown }[])[0]?.enabled ?? 0) === 1;
    if (!enabled) {
      await connection.query("SET GLOBAL innodb_monitor_enable = 'trx_rw_commits'");
      cleanups.set('innodb monitor', () => adminQuery(serverUrl, "SET GLOBAL innodb_monitor_disable = 'trx_rw_commits'").then(() => undefined));
    }
    return new CommitCounter(connection, !enabled, cleanups);
  }

  async read(): Promise<CommitCounters> {
    const [metric] = await this.#connection.query("SELECT `count` AS n FROM information_schema.INNODB_METRICS WHERE name = 'trx_rw_commits'");
    const [status] = await this.#connection.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Questions')");
    const value = (name: string) => Number((status as { Variable_name: string; Value: unknown }[]).find((r) => r.Variable_name === name)?.Value ?? Number.NaN);
    return {
      rwCommits: Number((metric as { n: unknown }[])[0]?.n ?? Number.NaN),
      comCommit: value('Com_commit'),
      statements: value('Questions'),
    };
  }

  /** Switches the monitor off again if `open` switched it on, and closes the connection. */
  async close(): Promise<void> {
    try {
      if (this.#enabledHere) {
        await this.#connection.query("SET GLOBAL innodb_monitor_disable = 'trx_rw_commits'");
        this.#cleanups.delete('innodb monitor');
      }
    } finally {
      await this.#connection.end();
    }
  }
}

/**
 * Samples the server's process list every `intervalMs` for statements of other clients (any database not named
 * `durable_ops_bench_…`, background threads excluded): a measurement made while others were busy is marked noisy,
 * because the commit counters and the shared CPU both include their work.
 */
export class ForeignActivityProbe {
  /** Samples taken, and samples that saw at least one foreign statement running. */
  samples = 0;
  busySamples = 0;
  readonly #connection: Connection;
  readonly #timer: NodeJS.Timeout;
  #pending: Promise<void> = Promise.resolve();
  private constructor(connection: Connection, intervalMs: number) {
    this.#connection = connection;
    this.#timer = setInterval(() => {
      this.#pending = this.#pending.then(() => this.#sample()).catch(() => {});
    }, intervalMs);
  }

  static async start(serverUrl: string, intervalMs = 250): Promise<ForeignActivityProbe> {
    return new ForeignActivityProbe(await connect(serverUrl), intervalMs);
  }

  async #sample(): Promise<void> {
    const [rows] = await this.#connection.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') " +
        "AND (DB IS NULL OR DB NOT LIKE 'durable\\_ops\\_bench\\_%') AND USER <> 'system user'",
    );
    this.samples++;
    if (Number((rows as { n: unknown }[])[0]?.n ?? 0) > 0) this.busySamples++;
  }

  async stop(): Promise<{ samples: number; busySamples: number }> {
    clearInterval(this.#timer);
    await this.#pending;
    await this.#connection.end();
    return { samples: this.samples, busySamples: this.busySamples };
  }
}


/** The server settings that decide commit cost and cache hits, for the report (`SHOW VARIABLES`). */
export async function mariadbSettings(serverUrl: string): Promise<string> {
  const rows = await adminQuery<{ Variable_name: string; Value: string }>(
    serverUrl,
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_buffer_pool_size', 'innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'tx_isolation')",
  );
  const v = Object.fromEntries(rows.map((r) => [r.Variable_name, r.Value]));
  const pool = Number(v.innodb_buffer_pool_size);
  return (
    `buffer pool ${Number.isFinite(pool) ? `${Math.round(pool / 2 ** 20)} MiB` : '?'}, innodb_flush_log_at_trx_commit=${v.innodb_flush_log_at_trx_commit ?? '?'}, ` +
    `log_bin=${v.log_bin ?? '?'}, sync_binlog=${v.sync_binlog ?? '?'}, default isolation ${v.tx_isolation ?? '?'}`
  );
}
