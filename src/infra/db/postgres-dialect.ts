// Kysely over postgres.js, tuned for the request path: every query runs as a named prepared
// statement (parsed and planned once per connection, then only bound and executed), and a
// connection is taken from the pool for the whole of a transaction only; a lone query uses
// the pool directly instead of reserving a connection around it.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { ReservedSql, Sql } from 'postgres';

/**
 * Above this many parameters a query is a bulk load (import), whose text varies with its row
 * count and whose parse cost is spread over many rows: it is not worth a cached statement.
 */
const MAX_PREPARED_PARAMETERS = 1000;

export class PostgresJsDialect implements Dialect {
  constructor(private readonly sql: Sql) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PostgresJsDriver(this.sql);
  }
  createIntrospector(db: Kysely<any>) {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
}

class PostgresJsConnection implements DatabaseConnection {
  private reserved: ReservedSql | undefined;
  constructor(private readonly sql: Sql) {}

  async reserve(): Promise<void> {
    this.reserved ??= await this.sql.reserve();
  }

  release(): void {
    this.reserved?.release();
    this.reserved = undefined;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const parameters = [...query.parameters] as never[];
    const result = await (this.reserved ?? this.sql).unsafe(query.sql, parameters, {
      prepare: parameters.length <= MAX_PREPARED_PARAMETERS,
    });
    const { command, count } = result;
    const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return { numAffectedRows: changed ? BigInt(count) : undefined, rows: Array.from(result) as R[] };
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    const cursor = (this.reserved ?? this.sql).unsafe(query.sql, [...query.parameters] as never[]).cursor(chunkSize);
    for await (const rows of cursor) yield { rows: rows as R[] };
  }
}

class PostgresJsDriver implements Driver {
  constructor(private readonly sql: Sql) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PostgresJsConnection(this.sql);
  }
  async beginTransaction(connection: PostgresJsConnection, settings: TransactionSettings): Promise<void> {
    await connection.reserve();
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    const mode = settings.accessMode ? ` ${settings.accessMode}` : '';
    await connection.executeQuery(raw(`start transaction${level}${mode}`));
  }
  async commitTransaction(connection: PostgresJsConnection): Promise<void> {
    await connection.executeQuery(raw('commit'));
  }
  async rollbackTransaction(connection: PostgresJsConnection): Promise<void> {
    await connection.executeQuery(raw('rollback'));
  }
  async savepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`savepoint ${quoteIdent(name)}`));
  }
  async rollbackToSavepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`rollback to savepoint ${quoteIdent(name)}`));
  }
  async releaseSavepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`release savepoint ${quoteIdent(name)}`));
  }
  async releaseConnection(connection: PostgresJsConnection): Promise<void> {
    connection.release();
  }
  async destroy(): Promise<void> {
    await this.sql.end();
  }
}

const raw = (sql: string) => CompiledQuery.raw(sql);
const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
