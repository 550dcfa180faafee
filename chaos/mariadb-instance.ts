import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createConnection } from 'mysql2/promise';

/**
 * A private MariaDB server in a temporary data directory, on a free loopback port, that its owner may crash and
 * restart at will (the chaos harness does; the test setup uses one when no server is reachable). Root has no password.
 */
export interface MariadbInstance {
  /** `mysql://root@127.0.0.1:<port>/`, no database selected. */
  readonly adminUrl: string;
  readonly port: number;
  /**
   * Crashes the server (SIGKILL: no clean shutdown, InnoDB recovers from its redo log on start) and starts it again on
   * the same port and data directory; resolves once it accepts connections.
   * @throws {Error} when it does not come back within 60 s.
   */
  crashAndRestart(): Promise<void>;
  /** Stops the server (SIGTERM) and deletes its data directory, unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
  /** The data directory (deleted by {@link MariadbInstance.stop}). */
  readonly dataDir: string;
}

function findBinary(names: readonly string[]): string | undefined {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    for (const name of names) if (existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}`))));
  });
}

/** Ports tried by {@link freeLoopbackPort}: below the ephemeral range (Linux 32768–60999, macOS 49152–65535). */
const PICK_FROM = 20_000;
const PICK_TO = 32_767;

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(false) : reject(error)));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, picked at random below the ephemeral range. A port the OS hands
 * out for `listen(0)` would not do: between this probe and the caller's bind, any server the caller starts first on
 * port 0 (the local stack starts its queue and model stand-ins before the API) or any outgoing connection may be given
 * the same port, and the caller's bind fails with EADDRINUSE. Outside the ephemeral range only another caller of this
 * function can collide, and the probe catches a port still in use.
 * @throws {Error} when 50 random ports in a row are taken.
 */
export async function freeLoopbackPort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = PICK_FROM + Math.floor(Math.random() * (PICK_TO - PICK_FROM + 1));
    if (await listensOn(port)) return port;
  }
  throw new Error(`no free loopback port between ${PICK_FROM} and ${PICK_TO} after 50 tries`);
}

async function accepts(port: number): Promise<boolean> {
  try {
    await (await createConnection({ host: '127.0.0.1', port, user: 'root', connectTimeout: 2_000 })).end();
    return true;
  } catch {
    return false;
  }
}

async function waitUntilAccepting(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`mariadbd exited with ${child.exitCode} before accepting connections`);
    if (Date.now() > deadline) throw new Error('mariadbd did not accept connections within 60 s');
    await delay(100);
  }
}

/**
 * Initialises a data directory (`mariadb-install-db`) and starts `mariadbd` on it, bound to 127.0.0.1 only, without
 * binary logging (so `SKIP LOCKED` and triggers need no binlog settings).
 * @returns `undefined` when this machine has no MariaDB server binaries.
 * @throws {Error} when initialisation fails or the server does not accept connections within 60 s.
 */
export async function startMariadbInstance(): Promise<MariadbInstance | undefined> {
  const daemon = findBinary(['mariadbd', 'mysqld']);
  const installDb = findBinary(['mariadb-install-db', 'mysql_install_db']);
  if (!daemon || !installDb) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-mariadb-'));
  const port = await freeLoopbackPort();
  try {
    await run(installDb, ['--no-defaults', `--datadir=${dir}/data`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const args = ['--no-defaults', `--datadir=${dir}/data`, `--socket=${dir}/s.sock`, `--port=${port}`, '--bind-address=127.0.0.1', '--user=root', '--skip-log-bin', '--max-connections=500'];
  const exited = (child: ChildProcess) => (child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve())));
  let child: ChildProcess = spawn(daemon, args, { stdio: 'ignore' });
  /** Waits for the current child; one that never accepts connections is killed, so nothing is left running. */
  const ready = async () => {
    try {
      await waitUntilAccepting(port, child);
    } catch (error) {
      child.kill('SIGKILL');
      await exited(child);
      throw error;
    }
  };
  try {
    await ready();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    adminUrl: `mysql://root@127.0.0.1:${port}/`,
    port,
    dataDir: dir,
    crashAndRestart: async () => {
      child.kill('SIGKILL');
      await exited(child);
      child = spawn(daemon, args, { stdio: 'ignore' });
      await ready();
    },
    stop: async (options = {}) => {
      child.kill('SIGTERM');
      await exited(child);
      if (!options.keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}
