import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';

/**
 * The dev secret of a local stack: the HS256 key its server verifies dev tokens with and `npm run token` signs them with
 * (docs/design.md §9). Unless `DEV_JWT_SECRET` is set, it is 32 random bytes generated on first use and kept in the
 * local data directory, so each checkout (each data directory) has its own: a token minted for one stack does not verify
 * on another, and no secret published with the code can mint one.
 */

/** The name of the file holding the generated dev secret, in the local data directory. */
export const DEV_SECRET_FILE = 'dev-jwt-secret';

/** Random bytes of a generated dev secret (256 bits, the HS256 key size RFC 7518 §3.2 asks for at least). */
const SECRET_BYTES = 32;

/**
 * The local data directory for `databaseUrl`: the SQLite database file's directory (`sqlite:` or `file:` URLs), else —
 * a MariaDB URL or an in-memory database — `.data` under the working directory, as `npm start` has always used.
 */
export function localDataDir(databaseUrl: string): string {
  const file = /^(?:sqlite|file):(.+)$/.exec(databaseUrl)?.[1];
  return file && file !== ':memory:' ? dirname(file) : '.data';
}

/** The file's secret, or undefined when there is no such file. @throws {ConfigError} when it holds something else. */
async function readSecret(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const secret = text.trim();
  if (!/^[A-Za-z0-9_-]{43}$/.test(secret)) throw new ConfigError(`${file} does not hold a dev secret: delete it to have a new one generated`);
  return secret;
}

/**
 * The dev secret the local stack of `config` uses: `DEV_JWT_SECRET` when set; otherwise the one in
 * `<local data directory>/dev-jwt-secret` (see {@link localDataDir}), generated there on first use — 32 random bytes,
 * base64url (43 characters), in a file of mode 0600 (owner read/write only) that is never overwritten, so two
 * processes starting at once (`npm start` and `npm run token`) end up with the same one.
 * @returns the secret (at least 32 characters).
 * @throws {ConfigError} when the file exists but holds no dev secret; file-system errors when the directory cannot be
 * created or the file cannot be read or written.
 */
export async function localDevSecret(config: Pick<Config, 'DEV_JWT_SECRET' | 'DATABASE_URL'>): Promise<string> {
  if (config.DEV_JWT_SECRET !== undefined) return config.DEV_JWT_SECRET;
  const dir = localDataDir(config.DATABASE_URL);
  const file = join(dir, DEV_SECRET_FILE);
  const existing = await readSecret(file);
  if (existing !== undefined) return existing;
  await mkdir(dir, { recursive: true });
  // Written whole under a name of its own, then linked into place: link() fails if the file exists, so the one of two
  // processes starting at once that comes second reads the first one's secret, never a half-written file.
  const draft = join(dir, `.${DEV_SECRET_FILE}.${process.pid}.${randomBytes(4).toString('hex')}`);
  try {
    await writeFile(draft, `${randomBytes(SECRET_BYTES).toString('base64url')}\n`, { flag: 'wx', mode: 0o600 });
    // The mode given to open() is narrowed by the umask, never widened; make sure of 0600 all the same.
    await chmod(draft, 0o600);
    await link(draft, file).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
  } finally {
    await rm(draft, { force: true });
  }
  const secret = await readSecret(file);
  if (secret === undefined) throw new ConfigError(`${file} vanished while it was being created`);
  return secret;
}
