import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { waitFor } from './wait-for.js';

/** Whether the process that took the lock `dir` is gone (a killed run): then the lock is taken over. */
function lockIsStale(dir: string): boolean {
  try {
    process.kill(Number(readFileSync(join(dir, 'pid'), 'utf8')), 0);
    return false;
  } catch (error) {
    // No pid file yet (its owner is between mkdir and write) counts as held; a pid that no longer runs as stale.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Runs `body` while holding the lock `dir`, so test files in parallel vitest workers (separate processes) never run it
 * at once. The lock is a directory (`mkdir` is atomic) holding the owner's pid, removed when `body` settles; one whose
 * process is gone (a killed run: the pid no longer runs) is taken over.
 * @param dir the lock directory; its parent is created when missing.
 * @param timeoutMs how long to wait for another process to release it, in ms.
 * @throws {Error} when the lock is not free within `timeoutMs`; whatever `body` throws.
 */
export async function withDirectoryLock<T>(dir: string, timeoutMs: number, body: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(dir), { recursive: true });
  await waitFor(
    () => {
      try {
        mkdirSync(dir);
        writeFileSync(join(dir, 'pid'), String(process.pid));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (lockIsStale(dir)) rmSync(dir, { recursive: true, force: true });
        return false;
      }
    },
    { timeoutMs, intervalMs: 500, what: `the lock ${dir}` },
  );
  try {
    return await body();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
