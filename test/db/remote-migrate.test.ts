import { LambdaClient } from '@aws-sdk/client-lambda';
import { sql } from 'kysely';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { ConfigError } from '../../lib/errors.js';
import { createMigrateHandler, describeMigrationError } from '../../lib/db/migrate-function.js';
import { MigrateFunctionError, MigrateInvokeError, MigrateResponseError, MigrationFailedError } from '../../lib/db/migration-errors.js';
import { migrateRemote } from '../../lib/db/remote-migrate.js';
import { openStore, parseDatabaseUrl, type Store } from '../../lib/db/store.js';
import { startLocalLambda, type LocalFunction, type LocalLambda } from '../../lib/local/local-lambda.js';
import { silentLogger, type Logger } from '../../lib/logger.js';
import { lazy } from '../../lib/runtime.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';

const PASSWORD = 'Sup3rS3cretPassw0rd';
const ALL_UP = Object.keys(migrations)
  .sort()
  .map((migrationName) => ({ migrationName, direction: 'Up', status: 'Success' }));

/** A logger that keeps every line, to check what reaches CloudWatch. */
function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (message: string, context?: Record<string, unknown>) => void lines.push(JSON.stringify({ level, message, ...context }));
  return { lines, debug: keep('DEBUG'), info: keep('INFO'), warn: keep('WARN'), error: keep('ERROR') };
}

/** A local Invoke API serving `functions`, and a client pointed at it as the CLI's would be at AWS. */
async function invokeApi(functions: Record<string, LocalFunction>): Promise<{ lambda: LocalLambda; client: LambdaClient; close(): Promise<void> }> {
  const lambda = await startLocalLambda({ port: 0, functions });
  const client = new LambdaClient({
    region: 'eu-west-1',
    endpoint: lambda.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  return {
    lambda,
    client,
    close: async () => {
      client.destroy();
      await lambda.close();
    },
  };
}

const asLocal = (handler: (event: unknown) => Promise<unknown>): LocalFunction => (payload) => handler(payload);

describe.each(DIALECTS)('migrations through the migrate Lambda on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let fresh: TestDatabase;
  let conflicting: TestDatabase;
  let api: Awaited<ReturnType<typeof invokeApi>>;
  const logger = capturingLogger();

  beforeAll(async () => {
    if (skip) return;
    fresh = await createTestDatabase(dialect, { migrate: false });
    conflicting = await createTestDatabase(dialect, { migrate: false });
    // A table of a later migration already exists (a hand-made hotfix, say): that migration must fail, visibly.
    await sql`CREATE TABLE jobs (id int)`.execute(conflicting.store.db);
    api = await invokeApi({
      'durable-ops-test-migrate': asLocal(createMigrateHandler({ store: async () => fresh.store, logger: silentLogger })),
      'durable-ops-test-migrate-conflicting': asLocal(createMigrateHandler({ store: async () => conflicting.store, logger })),
    });
  });
  afterAll(async () => {
    await api?.close();
    await fresh?.drop();
    await conflicting?.drop();
  });

  it.skipIf(skip)('applies every pending migration and reports each one; a second run has nothing to do', async () => {
    expect(await migrateRemote(api.client, 'durable-ops-test-migrate')).toEqual(ALL_UP);
    // The schema is really there: the last migration's table answers a query.
    await expect(fresh.store.db.selectFrom('operation_key_aliases').selectAll().execute()).resolves.toEqual([]);
    expect(await migrateRemote(api.client, 'durable-ops-test-migrate')).toEqual([]);
  });

  it.skipIf(skip)('accepts a function ARN with a qualifier, as the CLI may be given one', async () => {
    await expect(migrateRemote(api.client, 'arn:aws:lambda:eu-west-1:123456789012:function:durable-ops-test-migrate:$LATEST')).resolves.toEqual([]);
  });

  it.skipIf(skip)('a failing migration comes back as MigrationFailedError naming it, with every result of the run', async () => {
    const error = await migrateRemote(api.client, 'durable-ops-test-migrate-conflicting').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationFailedError);
    const failed = error as MigrationFailedError;
    const failing = failed.results.find((r) => r.status === 'Error');
    expect(failing?.migrationName).toBe('20261201000100_create_jobs');
    expect(failed.reason).toMatch(/^20261201000100_create_jobs failed: (ER_TABLE_EXISTS_ERROR \(errno 1050\)|SQLITE_ERROR)$/);
    // Every migration before it ran (on MariaDB they stay applied: no transactional DDL), every one after it did not.
    const index = ALL_UP.findIndex((m) => m.migrationName === '20261201000100_create_jobs');
    expect(failed.results.slice(0, index).every((r) => r.status === 'Success')).toBe(true);
    expect(failed.results.slice(index + 1).every((r) => r.status === 'NotExecuted')).toBe(true);
    // No SQL text reaches the caller; the full error is in the function's log.
    expect(failed.message).not.toMatch(/already exists|create table/i);
    expect(logger.lines.some((line) => line.includes('"failedMigration":"20261201000100_create_jobs"') && line.includes('errorMessage'))).toBe(true);
  });
});

describe('the migrate Lambda and migrateRemote when things go wrong', () => {
  let api: Awaited<ReturnType<typeof invokeApi>>;
  const unreachable: Store[] = [];
  const logger = capturingLogger();

  beforeAll(async () => {
    api = await invokeApi({
      // Port 1 on the loopback refuses connections: the database is unreachable, as behind a wrong security group.
      'unreachable-mariadb': asLocal(
        createMigrateHandler({
          store: lazy(() => {
            const store = openStore(`mysql://durable_ops_migrator:${PASSWORD}@127.0.0.1:1/durable_ops`);
            unreachable.push(store);
            return store;
          }),
          logger,
        }),
      ),
      'bad-config': asLocal(
        createMigrateHandler({
          store: async () => openStore(`postgres://durable_ops_migrator:${PASSWORD}@db.internal/durable_ops`),
          logger,
        }),
      ),
      crashing: async () => {
        const error = new Error(`Init failed: connection mysql://durable_ops_migrator:${PASSWORD}@db.internal/x`);
        error.name = 'Runtime.ImportModuleError';
        throw error;
      },
      'not-a-migrator': async () => ({ statusCode: 200, body: '{}' }),
    });
  });
  afterAll(async () => {
    await api?.close();
    for (const store of unreachable) await store.destroy();
  });

  it('an unreachable database is a MigrationFailedError with no results and no credential anywhere', async () => {
    const error = await migrateRemote(api.client, 'unreachable-mariadb').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as MigrationFailedError).results).toEqual([]);
    expect((error as MigrationFailedError).reason).toBe('could not run migrations: ECONNREFUSED');
    expect(inspect(error, { depth: 10 })).not.toContain(PASSWORD);
    expect(logger.lines.join('\n')).not.toContain(PASSWORD);
  });

  it('a DATABASE_URL the store does not understand is reported by its fixed ConfigError message', async () => {
    const error = await migrateRemote(api.client, 'bad-config').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as MigrationFailedError).reason).toBe('could not run migrations: DATABASE_URL must start with mysql://, mariadb://, sqlite: or file:');
    expect(inspect(error, { depth: 10 })).not.toContain(PASSWORD);
  });

  it('a crashed function is a MigrateFunctionError carrying its errorType only, never its message', async () => {
    const error = await migrateRemote(api.client, 'crashing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrateFunctionError);
    expect((error as MigrateFunctionError).errorType).toBe('Runtime.ImportModuleError');
    expect(inspect(error, { depth: 10 })).not.toContain(PASSWORD);
  });

  it('a function that answers something else is a MigrateResponseError', async () => {
    await expect(migrateRemote(api.client, 'not-a-migrator')).rejects.toBeInstanceOf(MigrateResponseError);
  });

  it('a missing function is a MigrateInvokeError with the service error name and status', async () => {
    const error = await migrateRemote(api.client, 'no-such-function').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrateInvokeError);
    expect(error).toMatchObject({ code: 'migrate_invoke_failed', errorName: 'ResourceNotFoundException', httpStatus: 404 });
  });

  it('a name that is no Lambda function name is refused before any call', async () => {
    await expect(migrateRemote(api.client, 'https://example.com/fn')).rejects.toBeInstanceOf(ConfigError);
  });

  it('the function refuses any input: migrations only go forward in AWS', async () => {
    const handler = createMigrateHandler({ store: () => Promise.reject(new Error('never opened')), logger: silentLogger });
    await expect(handler({ down: true })).resolves.toEqual({ results: [], error: expect.stringContaining('takes no input') });
  });

  it('error summaries keep the driver code and drop the driver message', () => {
    const parseError = Object.assign(new Error("You have an error in your SQL syntax near 'secret'"), { code: 'ER_PARSE_ERROR', errno: 1064 });
    expect(describeMigrationError(parseError, '20261130000100_create_operations')).toBe('20261130000100_create_operations failed: ER_PARSE_ERROR (errno 1064)');
    expect(describeMigrationError(new TypeError('x is not a function: secret'))).toBe('could not run migrations: TypeError');
    expect(describeMigrationError('a string')).toBe('could not run migrations: Error');
  });
});

describe('DATABASE_URL TLS (RDS Proxy with RequireTLS)', () => {
  it('?ssl=true asks for verified TLS; ssl=false or none does not; anything else is refused without echoing the URL', () => {
    expect(parseDatabaseUrl('mysql://app:pw@proxy.example.com:3306/durable_ops?ssl=true')).toMatchObject({ kind: 'mariadb', database: 'durable_ops', tls: true });
    expect(parseDatabaseUrl('mysql://app:pw@proxy.example.com:3306/durable_ops?ssl=false')).toMatchObject({ tls: false });
    expect(parseDatabaseUrl('mysql://app:pw@proxy.example.com:3306/durable_ops')).toMatchObject({ tls: false });
    expect(() => parseDatabaseUrl(`mysql://app:${PASSWORD}@proxy.example.com/durable_ops?ssl=yes`)).toThrow(ConfigError);
    expect(() => parseDatabaseUrl(`mysql://app:${PASSWORD}@proxy.example.com/durable_ops?ssl=yes`)).not.toThrow(PASSWORD);
  });

  it.skipIf(!hasMariadb())('with ?ssl=true a connection to a server without a trusted certificate fails instead of going plain', async () => {
    const t = await createTestDatabase('mariadb', { migrate: false });
    const url = new URL(t.url);
    url.searchParams.set('ssl', 'true');
    const store = openStore(url.toString());
    try {
      // The test server has TLS disabled (or a self-signed certificate): either way no plaintext fallback.
      await expect(sql`SELECT 1`.execute(store.db)).rejects.toThrow();
    } finally {
      await store.destroy();
      await t.drop();
    }
  });
});
