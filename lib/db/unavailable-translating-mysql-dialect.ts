import { MysqlDialect, type CompiledQuery, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type TransactionSettings } from 'kysely';
import { DatabaseUnavailableError } from '../errors.js';
import { translateUnavailable } from './database-unavailable.js';

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translateUnavailable(error);
  }
}

/**
 * kysely's MySQL dialect whose driver turns every mysql2 error that means "the database is unavailable" into a
 * `DatabaseUnavailableError` (see `translateUnavailable`): the one place the store translates them, so every statement,
 * transaction step and pool checkout of a MariaDB store — API, worker, sweeper alike — fails with the one typed error
 * when the server is down, restarting, out of connections, or the connection is cut. Every other driver error passes
 * through unchanged (duplicate key, deadlock and the rest keep their own handling in `Capabilities`).
 */
export class UnavailableTranslatingMysqlDialect extends MysqlDialect {
  override createDriver(): Driver {
    return new UnavailableTranslatingDriver(super.createDriver());
  }
}

class TranslatingConnection implements DatabaseConnection {
  /** The outage this connection died of, once a statement on it failed with one. */
  lost: DatabaseUnavailableError | undefined;

  constructor(readonly inner: DatabaseConnection) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return this.noting(() => this.inner.executeQuery<R>(compiledQuery));
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(compiledQuery, chunkSize);
    } catch (error) {
      throw this.note(translateUnavailable(error));
    }
  }

  /** `work`, its outage translated and remembered as {@link lost}. */
  async noting<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.note(translateUnavailable(error));
    }
  }

  private note(error: unknown): unknown {
    if (error instanceof DatabaseUnavailableError) this.lost ??= error;
    return error;
  }
}

/** A transaction step on `connection`, its outage translated (and remembered by the connection). */
const stepOn = <T>(connection: DatabaseConnection, work: () => Promise<T>): Promise<T> =>
  connection instanceof TranslatingConnection ? connection.noting(work) : translated(work);

const innerOf = (connection: DatabaseConnection) => (connection instanceof TranslatingConnection ? connection.inner : connection);

class UnavailableTranslatingDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return translated(() => this.inner.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new TranslatingConnection(await translated(() => this.inner.acquireConnection()));
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return stepOn(connection, () => this.inner.beginTransaction(innerOf(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return stepOn(connection, () => this.inner.commitTransaction(innerOf(connection)));
  }

  /**
   * On a connection already lost to an outage, fails at once with that outage (the server rolls back a transaction whose
   * connection ends): kysely rethrows a failed rollback instead of the error that made it roll back, and mysql2's
   * "closed state" answer would hide the original reason (`ER_CONNECTION_KILLED`, `PROTOCOL_CONNECTION_LOST`…).
   */
  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof TranslatingConnection && connection.lost) return Promise.reject(connection.lost);
    return translated(() => this.inner.rollbackTransaction(innerOf(connection)));
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

  private savepointStep(
    step: 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint',
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    const method = this.inner[step];
    if (!method) throw new Error(`The MySQL driver has no ${step}`);
    return translated(() => method.call(this.inner, innerOf(connection), name, compile));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(innerOf(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
