// Bounds the wait for a pooled connection. postgres.js `reserve()`, which the Kysely dialect calls for
// every query and transaction, queues without a deadline and can wait for ever after a server-side
// disconnect; here the wait ends after `acquireMs` with an error the HTTP layer answers as 503.
import type { DatabaseConnection, Dialect, Driver } from 'kysely';

/** The error of an acquisition that ran out of time (mapped to 503 service_unavailable). */
export class AcquireTimeoutError extends Error {
  readonly code = 'ACQUIRE_TIMEOUT';
  constructor(ms: number) {
    super(`no database connection within ${ms} ms`);
  }
}

export function boundedAcquisition(dialect: Dialect, acquireMs: number): Dialect {
  if (!(acquireMs > 0)) return dialect;
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => boundedDriver(dialect.createDriver(), acquireMs),
  };
}

function boundedDriver(driver: Driver, acquireMs: number): Driver {
  return {
    init: () => driver.init(),
    destroy: () => driver.destroy(),
    beginTransaction: (connection, settings) => driver.beginTransaction(connection, settings),
    commitTransaction: (connection) => driver.commitTransaction(connection),
    rollbackTransaction: (connection) => driver.rollbackTransaction(connection),
    savepoint: driver.savepoint?.bind(driver),
    rollbackToSavepoint: driver.rollbackToSavepoint?.bind(driver),
    releaseSavepoint: driver.releaseSavepoint?.bind(driver),
    releaseConnection: (connection) => driver.releaseConnection(connection),
    acquireConnection: () =>
      new Promise<DatabaseConnection>((resolve, reject) => {
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          reject(new AcquireTimeoutError(acquireMs));
        }, acquireMs);
        driver.acquireConnection().then(
          (connection) => {
            clearTimeout(timer);
            // Too late for its caller: hand the connection straight back to the pool.
            if (timedOut) void driver.releaseConnection(connection);
            else resolve(connection);
          },
          (err: unknown) => {
            clearTimeout(timer);
            reject(err);
          },
        );
      }),
  };
}
