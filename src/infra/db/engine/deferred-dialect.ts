// A Kysely dialect over a database still being opened: the Kysely instance exists at once, and its
// first query waits until the engine is open. `balcao serve` builds its app while PGlite starts.
import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';

/**
 * `dialect` is what the open engine gets; its adapter, query compiler and introspector are taken
 * from `shape`, a dialect of the same kind that is never connected (they never touch the engine).
 */
export function deferredDialect(shape: Dialect, dialect: Promise<Dialect>): Dialect {
  return {
    createAdapter: () => shape.createAdapter(),
    createQueryCompiler: () => shape.createQueryCompiler(),
    createIntrospector: (db) => shape.createIntrospector(db),
    createDriver: () => new DeferredDriver(dialect.then((open) => open.createDriver())),
  };
}

/** Kysely initializes a driver before any other call, and only once: that is where the wait is. */
class DeferredDriver implements Driver {
  private opened: Driver | undefined;

  constructor(private readonly opening: Promise<Driver>) {
    // A failed opening is reported by whoever awaits the engine; it must not also go unhandled here.
    opening.catch(() => {});
  }

  private get driver(): Driver {
    if (!this.opened) throw new Error('the database driver is used before it was initialized');
    return this.opened;
  }

  async init(): Promise<void> {
    this.opened = await this.opening;
    await this.opened.init();
  }

  acquireConnection(): Promise<DatabaseConnection> {
    return this.driver.acquireConnection();
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.driver.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.driver.releaseConnection(connection);
  }

  async destroy(): Promise<void> {
    await this.opened?.destroy();
  }
}
