import { createConnection, type Connection } from 'mysql2/promise';
import { startMariadbInstance } from '../../chaos/mariadb-instance.js';

/** A MariaDB the suite can create databases on. */
export interface MariadbServer {
  /** `mysql://user:pass@host:port/` with no database. */
  readonly adminUrl: string;
  stop(): Promise<void>;
}

/** Opens a connection to the server of a `mysql://` admin URL (no database selected). */
export function connectAdmin(adminUrl: string, connectTimeout = 10_000): Promise<Connection> {
  const url = new URL(adminUrl);
  return createConnection({
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username || 'root'),
    password: decodeURIComponent(url.password),
    connectTimeout,
  });
}

async function canConnect(adminUrl: string): Promise<boolean> {
  try {
    await (await connectAdmin(adminUrl, 2_000)).end();
    return true;
  } catch {
    return false;
  }
}

/** See `global-setup.ts`: DATABASE_URL (mysql), else 127.0.0.1:3306 root, else a throwaway server. */
export async function resolveMariadb(): Promise<MariadbServer | undefined> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv && /^(mysql|mariadb):\/\//.test(fromEnv)) {
    const url = new URL(fromEnv.replace(/^mariadb:/, 'mysql:'));
    url.pathname = '/';
    return { adminUrl: url.toString(), stop: async () => {} };
  }
  const local = 'mysql://root@127.0.0.1:3306/';
  if (await canConnect(local)) return { adminUrl: local, stop: async () => {} };
  const instance = await startMariadbInstance();
  return instance && { adminUrl: instance.adminUrl, stop: () => instance.stop() };
}
