import { createRequire } from 'node:module';
import pkg from '../package.json' with { type: 'json' };
import { OptionalDependencyMissingError } from './errors.js';

/**
 * The optional peer dependencies of the package (package.json `peerDependenciesMeta`): installed only by an application
 * that uses the feature, so they are loaded only when that feature starts, never at import of the package.
 */
export type OptionalPeer = 'better-sqlite3' | 'fauxqs';

/** The release of `name` the package is tested with (its pinned devDependency), for the install hint. */
function testedVersion(name: OptionalPeer): string {
  return pkg.devDependencies[name];
}

/**
 * Whether `error` is the module loader saying that `name` *itself* is not installed — not that something `name`
 * imports is missing, which is a broken installation and stays as it is.
 */
function isMissing(error: unknown, name: OptionalPeer): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && error.message.includes(`'${name}'`);
}

/**
 * Loads a CommonJS optional peer synchronously (`require`, resolved from this package, so from the application's
 * node_modules). `feature` names what needs it, for the error message, e.g. `'SQLite'`.
 * @throws {OptionalDependencyMissingError} when `name` is not installed; any other load error as it is.
 */
export function requireOptionalPeer<T>(name: OptionalPeer, feature: string): T {
  try {
    return createRequire(import.meta.url)(name) as T;
  } catch (error) {
    if (isMissing(error, name)) throw new OptionalDependencyMissingError(feature, name, testedVersion(name), { cause: error });
    throw error;
  }
}

/**
 * Loads an ES-module optional peer through `load`, a literal `() => import('…')` (so the module's types are kept).
 * @throws {OptionalDependencyMissingError} (rejects) when `name` is not installed; any other load error as it is.
 */
export async function importOptionalPeer<T>(name: OptionalPeer, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, name)) throw new OptionalDependencyMissingError(feature, name, testedVersion(name), { cause: error });
    throw error;
  }
}
