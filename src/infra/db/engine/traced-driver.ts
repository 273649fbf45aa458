// A span for each statement (and COMMIT) run inside a traced request or delivery (src/telemetry/tracing.ts), on
// either engine: a dialect's driver wrapped once when the database opens. Whether to trace is decided when a
// connection is taken: with traces off (the default) the engine's own connection is handed out as it is, so a
// statement pays no more than a forwarded call.
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryCompiler, QueryResult, TransactionSettings } from 'kysely';
import { type StatementTracer, statementTracer } from '../../../telemetry/tracing.ts';

/** `dialect`, its statements traced whenever traces are on. */
export function traceableDialect(dialect: Dialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: () => new TraceableDriver(dialect.createDriver()),
  };
}

/** A connection whose statements are traced; the engine's driver is always handed its own connection back. */
class TracedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    readonly tracer: StatementTracer,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.tracer.statement(query.sql, () => this.inner.executeQuery<R>(query));
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

const own = (connection: DatabaseConnection): DatabaseConnection =>
  connection instanceof TracedConnection ? connection.inner : connection;

/** The engine's own connection under a traced one (a write transaction asks it for its driver abilities). */
export const engineConnection = own;

/** The tracer of a traced connection (a write transaction traces what it sends past Kysely: statements sent ahead, COMMIT). */
export const connectionTracer = (connection: DatabaseConnection): StatementTracer | undefined =>
  connection instanceof TracedConnection ? connection.tracer : undefined;

type Compile = QueryCompiler['compileQuery'];

class TraceableDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  acquireConnection(): Promise<DatabaseConnection> {
    const tracer = statementTracer();
    const acquired = this.inner.acquireConnection();
    return tracer === undefined ? acquired : acquired.then((connection) => new TracedConnection(connection, tracer));
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(own(connection), settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof TracedConnection)
      return connection.tracer.statement('COMMIT', () => this.inner.commitTransaction(connection.inner));
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof TracedConnection)
      return connection.tracer.statement('ROLLBACK', () => this.inner.rollbackTransaction(connection.inner));
    return this.inner.rollbackTransaction(connection);
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    if (!this.inner.savepoint) throw new Error('The database driver does not support savepoints');
    await this.inner.savepoint(own(connection), name, compile);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    if (!this.inner.rollbackToSavepoint) throw new Error('The database driver does not support savepoints');
    await this.inner.rollbackToSavepoint(own(connection), name, compile);
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    if (!this.inner.releaseSavepoint) throw new Error('The database driver does not support savepoints');
    await this.inner.releaseSavepoint(own(connection), name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(own(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
