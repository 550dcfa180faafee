import { appOverrides, type DurableOpsApp } from '../app/durable-ops-app.js';
import { loadConfig } from '../config.js';
import { createObservability, type Observability } from '../observability/observability.js';
import { startLocalStack, type LocalStack } from './local-stack.js';

/** Options of {@link startLocalApp}. */
export interface LocalAppOptions {
  /** The environment the configuration is read from (`loadConfig`; empty strings count as unset). @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where every part logs and counts. @default `createObservability()` (Powertools JSON lines, EMF on stdout) */
  readonly observability?: Observability;
}

/**
 * The local stack (`startLocalStack`, docs/design.md §9) serving an application's task types: migrations, the HTTP API on
 * `PORT` (0: any free port; see {@link LocalStack.url}) verifying dev tokens (`signDevToken` with `DEV_JWT_SECRET`), an
 * in-process SQS queue (fauxqs, an optional peer dependency) feeding the worker, and the sweeper on a timer — on
 * `DATABASE_URL` (SQLite by default, which needs the optional peer `better-sqlite3`; `mysql://…` for MariaDB). The
 * configuration is read once, from `options.env`; the app's registry function, if any, is called with it.
 *
 * ```ts
 * const stack = await startLocalApp(app, { env: { ...process.env, PORT: '0' } });
 * // … POST `${stack.url}/api/operations` with a dev token …
 * await stack.stop();
 * ```
 * @throws {ConfigError} for invalid configuration; `OptionalDependencyMissingError` when fauxqs (or, for SQLite,
 * better-sqlite3) is not installed; the `TypeError` of a malformed registry or recovery module; driver errors if the
 * database cannot be reached or migrated.
 */
export async function startLocalApp(app: DurableOpsApp, options: LocalAppOptions = {}): Promise<LocalStack> {
  const config = loadConfig(options.env ?? process.env);
  return startLocalStack(config, options.observability ?? createObservability(), appOverrides(app, config));
}
