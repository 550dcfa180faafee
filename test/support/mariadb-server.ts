import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, type Connection } from 'mysql2/promise';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

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

function findBinary(names: string[]): string | undefined {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    for (const name of names) if (existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}`))));
  });
}

async function startThrowaway(): Promise<MariadbServer | undefined> {
  const daemon = findBinary(['mariadbd', 'mysqld']);
  const installDb = findBinary(['mariadb-install-db', 'mysql_install_db']);
  if (!daemon || !installDb) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-mariadb-'));
  const port = await freePort();
  await run(installDb, ['--no-defaults', `--datadir=${dir}/data`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root']);
  const child: ChildProcess = spawn(
    daemon,
    ['--no-defaults', `--datadir=${dir}/data`, `--socket=${dir}/s.sock`, `--port=${port}`, '--bind-address=127.0.0.1', '--user=root', '--skip-log-bin'],
    { stdio: 'ignore' },
  );
  const adminUrl = `mysql://root@127.0.0.1:${port}/`;
  await waitFor(() => canConnect(adminUrl), { timeoutMs: 60_000, intervalMs: 250, what: 'throwaway mariadbd to accept connections' });
  return {
    adminUrl,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
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
  return startThrowaway();
}
