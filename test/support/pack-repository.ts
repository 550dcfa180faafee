import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withDirectoryLock } from './directory-lock.js';
import { npmChildEnv } from './npm-child-env.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Held while one process packs: `npm pack` runs `prepack`, which deletes and rebuilds dist/ in the repository. */
const LOCK = join(ROOT, '.durable-ops/pack.lock');
/** How long a pack may wait for another process's pack. */
const LOCK_WAIT_MS = 15 * 60_000;

/** A packed tarball: its path and the files it holds, as `npm pack --json` lists them. */
export interface PackedRepository {
  readonly tarball: string;
  readonly files: readonly string[];
}

/**
 * `npm pack` of this repository into `destination`, one process at a time ({@link withDirectoryLock}): test files
 * packing at once would each run `prepack`, one deleting the dist/ another is compiling or packing. The child gets none
 * of the `npm_*` variables of a surrounding `npm test` ({@link npmChildEnv}).
 * @throws {Error} when `npm pack` fails (with its output), or the lock is not free within 15 minutes.
 */
export function packRepository(destination: string): Promise<PackedRepository> {
  return withDirectoryLock(LOCK, LOCK_WAIT_MS, async () => {
    const env = npmChildEnv();
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('npm', ['pack', '--json', '--pack-destination', destination], { cwd: ROOT, env, timeout: 420_000, maxBuffer: 64 * 1024 * 1024 }, (error, out, err) =>
        error ? reject(new Error(`npm pack failed: ${error.message}\n${out}\n${err}`)) : resolve(out),
      );
    });
    const [packed] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
    return { tarball: join(destination, packed.filename), files: packed.files.map((file) => file.path).sort() };
  });
}
