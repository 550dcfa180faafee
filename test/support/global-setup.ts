import type { TestProject } from 'vitest/node';
import { resolveMariadb, type MariadbServer } from './mariadb-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the MariaDB the suite uses (`mysql://…/`, no database), or '' when none could be found. */
    mariadbAdminUrl: string;
  }
}

let server: MariadbServer | undefined;

/**
 * Finds MariaDB once for the whole run: `DATABASE_URL` when it is a mysql:// URL, else 127.0.0.1:3306 as root,
 * else a throwaway `mariadbd` started from the installed binaries in a temp dir. Under `CI=true` failing to find
 * one fails the run: the MariaDB suite must never be skipped there.
 */
export async function setup(project: TestProject): Promise<void> {
  server = await resolveMariadb();
  if (!server && process.env.CI === 'true') {
    throw new Error('CI=true but no MariaDB was reachable and none could be started: the MariaDB suite must run in CI.');
  }
  project.provide('mariadbAdminUrl', server?.adminUrl ?? '');
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
