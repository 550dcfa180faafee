import { SqliteDialect, type DatabaseConnection, type Driver, type QueryCompiler, type TransactionSettings } from 'kysely';
import { StoreConnectionBusyError } from '../errors.js';

/**
 * How long a statement of a SQLite store waits for the store's one connection, in **ms**, before it fails with
 * {@link StoreConnectionBusyError}. Far longer than any transaction of durable-ops' own holds it (each is a few
 * statements); what waits this long waits for a transaction that waits for it, which would otherwise hang for good.
 */
export const SQLITE_CONNECTION_WAIT_MS = 30_000;

/**
 * kysely's SQLite dialect, with a bound on the wait for its one connection (kysely queues every statement behind the
 * transaction that holds it, without limit). A wait that times out leaves the queue: when its turn comes, the connection
 * is handed straight back.
 */
export class BoundedSqliteDialect extends SqliteDialect {
  constructor(
    config: ConstructorParameters<typeof SqliteDialect>[0],
    private readonly waitMs = SQLITE_CONNECTION_WAIT_MS,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return new BoundedWaitDriver(super.createDriver(), this.waitMs);
  }
}

class BoundedWaitDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly waitMs: number,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const pending = this.inner.acquireConnection();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.waitMs);
    });
    const connection = await Promise.race([pending, timedOut]).finally(() => clearTimeout(timer));
    if (connection) return connection;
    // Given up: when the connection comes to this waiter after all, pass it on at once.
    void pending.then((late) => this.inner.releaseConnection(late)).catch(() => undefined);
    throw new StoreConnectionBusyError(this.waitMs);
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.savepointStep('savepoint', connection, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.savepointStep('rollbackToSavepoint', connection, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.savepointStep('releaseSavepoint', connection, name, compile);
  }

  private async savepointStep(
    step: 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint',
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    const method = this.inner[step];
    if (!method) throw new Error(`The SQLite driver has no ${step}`);
    await method.call(this.inner, connection, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
