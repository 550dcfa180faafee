import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait-for.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Held while one process packs: `npm pack` runs `prepack`, which deletes and rebuilds dist/ in the repository. */
const LOCK = join(ROOT, '.durable-ops/pack.lock');
/** How long a pack may wait for another process's pack. */
const LOCK_WAIT_MS = 15 * 60_000;

/** Whether the process that took the lock is gone (a killed run): then the lock is taken over. */
function lockIsStale(): boolean {
  try {
    process.kill(Number(readFileSync(join(LOCK, 'pid'), 'utf8')), 0);
    return false;
  } catch (error) {
    // No pid file yet (its owner is between mkdir and write) counts as held; a pid that no longer runs as stale.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** A packed tarball: its path and the files it holds, as `npm pack --json` lists them. */
export interface PackedRepository {
  readonly tarball: string;
  readonly files: readonly string[];
}

/**
 * `npm pack` of this repository into `destination`, one process at a time: test files packing at once would each run
 * `prepack`, one deleting the dist/ another is compiling or packing. The lock is a directory (`mkdir` is atomic),
 * removed when the pack ends; one whose process is gone (a killed run: the pid it holds no longer runs) is taken over.
 * The child gets none of the `npm_*` variables of a surrounding `npm test`.
 * @throws {Error} when `npm pack` fails (with its output), or the lock is not free within 15 minutes.
 */
export async function packRepository(destination: string): Promise<PackedRepository> {
  mkdirSync(join(ROOT, '.durable-ops'), { recursive: true });
  await waitFor(
    () => {
      try {
        mkdirSync(LOCK);
        writeFileSync(join(LOCK, 'pid'), String(process.pid));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (lockIsStale()) rmSync(LOCK, { recursive: true, force: true });
        return false;
      }
    },
    { timeoutMs: LOCK_WAIT_MS, intervalMs: 500, what: `the pack lock ${LOCK}` },
  );
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS' && key !== 'INIT_CWD'));
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('npm', ['pack', '--json', '--pack-destination', destination], { cwd: ROOT, env, timeout: 420_000, maxBuffer: 64 * 1024 * 1024 }, (error, out, err) =>
        error ? reject(new Error(`npm pack failed: ${error.message}\n${out}\n${err}`)) : resolve(out),
      );
    });
    const [packed] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
    return { tarball: join(destination, packed.filename), files: packed.files.map((file) => file.path).sort() };
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
