import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withDirectoryLock } from './directory-lock.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Held while one process builds and uses functions/*.mjs. */
const LOCK = join(ROOT, '.durable-ops/lambda-bundles.lock');

/** How long another process may hold the bundles (a build plus two `osls package` runs), in ms. */
const LOCK_WAIT_MS = 10 * 60_000;

/**
 * Runs `npm run build` (`node scripts/build.mjs`: the Lambda bundles functions/<name>.mjs, git-ignored), then `use`,
 * holding a lock throughout ({@link withDirectoryLock}): esbuild rewrites the files in place, so a test file building
 * in another vitest worker would otherwise truncate a bundle this one is packaging or importing.
 * @throws {Error} when the build exits non-zero (with its output); whatever `use` throws.
 */
export function withLambdaBundles<T>(use: () => Promise<T>): Promise<T> {
  return withDirectoryLock(LOCK, LOCK_WAIT_MS, async () => {
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
        error ? reject(new Error(`npm run build failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve(),
      );
    });
    return use();
  });
}
