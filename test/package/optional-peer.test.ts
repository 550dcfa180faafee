import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { OptionalDependencyMissingError } from '../../lib/errors.js';
import { importOptionalPeer, requireOptionalPeer } from '../../lib/optional-peer.js';

/** A module loader's "not installed" error, as Node words it for `import` and for `require`. */
const notFound = (message: string, code: 'ERR_MODULE_NOT_FOUND' | 'MODULE_NOT_FOUND' = 'ERR_MODULE_NOT_FOUND') => Object.assign(new Error(message), { code });

describe('optional peer dependencies (loaded only when used)', () => {
  it('a missing peer becomes OptionalDependencyMissingError naming the feature, the package and the tested release', async () => {
    const cause = notFound("Cannot find package 'fauxqs' imported from /app/node_modules/durable-ops/dist/lib/local/local-queue.js");
    const error = await importOptionalPeer('fauxqs', 'The local queue', () => Promise.reject(cause)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OptionalDependencyMissingError);
    expect(error).toMatchObject({
      code: 'optional_dependency_missing',
      feature: 'The local queue',
      dependency: 'fauxqs',
      version: pkg.devDependencies.fauxqs,
      cause,
      message: `The local queue needs the optional peer dependency fauxqs: npm install fauxqs@${pkg.devDependencies.fauxqs}`,
    });
  });

  it('a package the installed peer imports that is missing is a broken installation: the loader error is kept as it is', async () => {
    const cause = notFound("Cannot find package 'fastify' imported from /app/node_modules/fauxqs/dist/app.js");
    await expect(importOptionalPeer('fauxqs', 'The local queue', () => Promise.reject(cause))).rejects.toBe(cause);
  });

  it('an installed peer is returned as loaded', async () => {
    expect(typeof requireOptionalPeer<unknown>('better-sqlite3', 'SQLite')).toBe('function');
    const fauxqs = await importOptionalPeer('fauxqs', 'The local queue', () => import('fauxqs'));
    expect(typeof fauxqs.buildApp).toBe('function');
  });
});
