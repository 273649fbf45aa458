// One query layer over both engines: Kysely with postgres.js (PostgreSQL) or PGlite (embedded).
// Both drivers are set to return the same JS values: numeric → number, date/time → the
// string PostgreSQL prints, timestamptz → its ISO 8601 string in UTC (timestamp-text.ts), bigint → number.
// Each engine's driver is loaded only when that engine is opened: a command run against PostgreSQL
// never loads PGlite (nor the other way round), which keeps the CLI's start-up short.
import type { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import type postgres from 'postgres';
import { type Config, DEFAULT_DB_POOL_SIZE, DEFAULT_READ_MAX_LAG_MS, type DatabaseTimeouts } from '../../../config.ts';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.ts';
import { deferredDialect } from './deferred-dialect.ts';
import { noDelaySocket } from './no-delay-socket.ts';
import { compileEngine } from './pglite-engine.ts';
import { PostgresJsDialect } from './postgres-dialect.ts';
import { traceableDialect } from './traced-driver.ts';
import { WriteLanes } from '../statements/write-lanes.ts';
import type { ReadRouter } from '../replicas/read-router.ts';
import type { DB } from './tables.ts';
import { isoTimestamp } from './timestamp-text.ts';

/** A connection or transaction, with every table typed (tables.ts, generated from the migrations). */
export type Db = Kysely<DB>;

export interface Database {
  readonly db: Db;
  readonly engine: 'postgres' | 'pglite';
  /** Calls `onPayload` for every NOTIFY on `channel` once its transaction commits; resolves to the unlisten. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** The driver under Kysely, for what Kysely cannot do (COPY, used by the bulk import). */
  readonly driver: DatabaseDriver;
  /** With BALCAO_READ_DATABASE_URL: where reads may go instead of the primary (read-router.ts). */
  readonly reads?: ReadRouter;
  /** PostgreSQL: connections of their own for the API keys' lookups (accounts/key-cache.ts), so that a request's
   *  authentication never queues behind the transactions that fill the pool when writes pile up. */
  readonly lookups?: Db;
  /** PostgreSQL: where a session of its own connects (LISTEN, change capture's replication): BALCAO_LISTEN_DATABASE_URL
   *  when set (straight to PostgreSQL, past a transaction-pooling PgBouncer), else DATABASE_URL. */
  readonly sessionUrl?: string;
  close(): Promise<void>;
}

/** The connections kept for key lookups, beside the pool (BALCAO_DB_POOL_SIZE). */
export const LOOKUP_CONNECTIONS = 2;

export type DatabaseDriver = { engine: 'postgres'; sql: postgres.Sql } | { engine: 'pglite'; pg: PGlite };

const OID = { int8: 20, numeric: 1700, date: 1082, time: 1083, timestamptz: 1184, timestamp: 1114 } as const;

const toNumber = (v: string) => (v === null ? null : Number(v));
const asIs = (v: string) => v;
/** A Date is sent as its ISO text; a string as written, for PostgreSQL to read (PGlite does the same): through
 *  a Date it would lose its microseconds (a sale's items are a microsecond apart) and read a zone-less text in
 *  the process's zone instead of the session's (UTC). Strings reach here validated (formats.ts, cursors). */
const timestampParameter = (v: Date | string) => (v instanceof Date ? v.toISOString() : String(v));

/** What opening needs; read replicas are opened only when `readDatabaseUrls` is given (the server, an export).
 *  An in-memory embedded database may start from a dump (PGlite's dumpDataDir: the tests start every
 *  database from one migrated snapshot). */
export type OpenOptions = Pick<Config, 'databaseUrl' | 'dataDir'> &
  Partial<
    Pick<Config, 'dbPoolSize' | 'dbTimeouts' | 'dbPrepare' | 'listenDatabaseUrl' | 'readDatabaseUrls' | 'readMaxLagMs' | 'redisUrl'>
  > & {
    snapshot?: Blob;
    /** The read router's Redis deadline (tests on a starved machine); 250 ms otherwise. */
    redisCommandTimeoutMs?: number;
  };

export async function openDatabase(config: OpenOptions, holder = 'balcao'): Promise<Database> {
  const { database, open } = await startDatabase(config, holder);
  try {
    await open;
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

/**
 * Starts opening the configured engine and returns at once: `database` can be handed out (its
 * queries wait for the engine) while `open` settles. The embedded engine takes most of a second
 * to start, which `balcao serve` spends building its app; a caller must await `open` (a failure
 * to open is reported there) and close `database` either way.
 */
export async function startDatabase(config: OpenOptions, holder = 'balcao'): Promise<{ database: Database; open: Promise<void> }> {
  if (config.databaseUrl) {
    const database = await openPostgres(
      config.databaseUrl,
      config.dbPoolSize ?? DEFAULT_DB_POOL_SIZE,
      config.dbTimeouts ?? DEFAULT_DB_TIMEOUTS,
      { prepare: config.dbPrepare ?? true, listenUrl: config.listenDatabaseUrl },
    );
    if (config.readDatabaseUrls?.length) return { database: await withReplicas(database, config), open: Promise.resolve() };
    return { database, open: Promise.resolve() };
  }
  return startPglite(config.dataDir, holder, config.snapshot);
}

/** Every wait on PostgreSQL is bounded (docs/operations.md says why each figure); these are loadConfig's defaults. */
export const DEFAULT_DB_TIMEOUTS: DatabaseTimeouts = Object.freeze({
  connectMs: 2_000,
  acquireMs: 1_500,
  statementMs: 5_000,
  idleSeconds: 60,
});

async function openPostgres(
  url: string,
  poolSize: number,
  timeouts: DatabaseTimeouts,
  pooling: { prepare: boolean; listenUrl?: string | undefined; writeLanes?: boolean } = { prepare: true },
): Promise<Database> {
  const { default: postgres } = await import('postgres');
  const connection: Record<string, string> = { TimeZone: 'UTC', application_name: 'balcao' };
  // Direct (the default): sent in the start-up packet, so every connection of the pool carries them at
  // no cost per query. A transaction left open by a stalled client is ended by the server rather than
  // holding its locks. Behind a transaction-pooling PgBouncer (BALCAO_DB_PREPARE=false) the start-up
  // packet may carry neither (PgBouncer refuses them): every transaction sets them with SET LOCAL in its
  // BEGIN's message instead, and lone statements take the role's or database's setting (docs/decisions.md).
  const sessionTimeouts = timeoutSettings(timeouts);
  if (pooling.prepare) Object.assign(connection, sessionTimeouts);
  const options = {
    onnotice: () => {},
    connection,
    connect_timeout: timeouts.connectMs / 1000,
    idle_timeout: timeouts.idleSeconds,
    // The driver's default waits up to 20 s between reconnection attempts; after an outage the
    // service must resume within seconds, so attempts are retried at most half a second apart.
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 0.5),
    // Not in the driver's type declarations, though it reads it (src/connection.js).
    ...({ socket: noDelaySocket } as object),
    types: {
      bigint: { to: OID.int8, from: [OID.int8], serialize: String, parse: toNumber },
      numeric: { to: OID.numeric, from: [OID.numeric], serialize: String, parse: toNumber },
      date: { to: OID.date, from: [OID.date, OID.time], serialize: String, parse: asIs },
      timestamptz: { to: OID.timestamptz, from: [OID.timestamptz], serialize: timestampParameter, parse: isoTimestamp },
    },
  };
  const sql = postgres(url, { ...options, max: poolSize, prepare: pooling.prepare });
  // Behind a transaction pooler no write lanes: it would hand each transaction of a lane's pipeline to another
  // server connection. Replicas take no writes.
  const lanes = pooling.prepare && pooling.writeLanes !== false ? new WriteLanes() : undefined;
  const pooler = pooling.prepare ? undefined : { afterBegin: setLocal(sessionTimeouts) };
  const db = new Kysely<DB>({ dialect: traceableDialect(new PostgresJsDialect(sql, waitBounds(timeouts), pooler, lanes)) });
  // Opened at the first lookup, like the pool's connections.
  const lookupSql = postgres(url, { ...options, max: LOOKUP_CONNECTIONS, prepare: pooling.prepare });
  const lookups = new Kysely<DB>({ dialect: traceableDialect(new PostgresJsDialect(lookupSql, waitBounds(timeouts), pooler)) });
  // LISTEN needs a session of its own, which a transaction-pooling PgBouncer does not keep: with
  // BALCAO_LISTEN_DATABASE_URL the listener connects there (straight to PostgreSQL) instead.
  const listenUrl = pooling.listenUrl && pooling.listenUrl !== url ? pooling.listenUrl : undefined;
  let listener: postgres.Sql | undefined;
  return {
    db,
    engine: 'postgres',
    async listen(channel, onPayload) {
      if (listenUrl) listener ??= postgres(listenUrl, { ...options, connection: { ...connection, ...sessionTimeouts }, max: 1 });
      const { unlisten } = await (listener ?? sql).listen(channel, onPayload);
      return unlisten;
    },
    driver: { engine: 'postgres', sql },
    lookups,
    sessionUrl: listenUrl ?? url,
    close: async () => {
      try {
        await Promise.all([db.destroy(), lookups.destroy()]);
      } finally {
        await listener?.end();
      }
    },
  };
}

/** The server-side timeouts a connection of the pool runs under. With statementMs 0 (the operator
 *  commands) both are turned off explicitly, over any database or role default (docs/deployment.md). */
function timeoutSettings(timeouts: DatabaseTimeouts): Record<string, string> {
  if (!(timeouts.statementMs > 0)) return { statement_timeout: '0', idle_in_transaction_session_timeout: '0' };
  return {
    statement_timeout: String(timeouts.statementMs),
    idle_in_transaction_session_timeout: String(Math.max(timeouts.statementMs * 2, 10_000)),
  };
}

/** `settings` as SET LOCAL statements to follow a BEGIN in its message ('' for none). */
function setLocal(settings: Record<string, string>): string {
  return Object.entries(settings)
    .map(([name, value]) => `; set local ${name} = ${Number(value)}`)
    .join('');
}

/** The primary with its read replicas (BALCAO_READ_DATABASE_URL), each a pool of its own. */
async function withReplicas(primary: Database, config: OpenOptions): Promise<Database> {
  const { ReadRouter } = await import('../replicas/read-router.ts');
  const timeouts = config.dbTimeouts ?? DEFAULT_DB_TIMEOUTS;
  // A replica that does not greet us at once is skipped: its reads fall back to the primary sooner.
  const replicaTimeouts = { ...timeouts, connectMs: Math.min(timeouts.connectMs, 1_000) };
  const urls = config.readDatabaseUrls ?? [];
  const replicas = await Promise.all(
    urls.map(async (url) => {
      const replica = await openPostgres(url, config.dbPoolSize ?? DEFAULT_DB_POOL_SIZE, replicaTimeouts, {
        prepare: config.dbPrepare ?? true,
        writeLanes: false,
      });
      const { sql } = replica.driver as { sql: postgres.Sql };
      // A pool that lived through its replica's restart can wait for ever in a plain end(): bounded here.
      return { url, db: replica.db, close: () => sql.end({ timeout: 1 }).then(() => replica.close()) };
    }),
  );
  const reads = new ReadRouter({
    primary: primary.db,
    replicas,
    maxLagMs: config.readMaxLagMs ?? DEFAULT_READ_MAX_LAG_MS,
    redisUrl: config.redisUrl,
    redisCommandTimeoutMs: config.redisCommandTimeoutMs,
  });
  return {
    ...primary,
    reads,
    close: async () => {
      await reads.close();
      await primary.close();
    },
  };
}

/** A connection waited for at most `acquireMs`; a query outside a transaction (which waits in the pool's queue,
 *  then runs under the statement timeout) at most both, plus a little for the network. */
function waitBounds(timeouts: DatabaseTimeouts) {
  return {
    acquireMs: timeouts.acquireMs,
    queryMs: timeouts.statementMs > 0 ? timeouts.acquireMs + timeouts.statementMs + 500 : 0,
  };
}

/**
 * The embedded engine's buffer cache. PostgreSQL clears all of it at every start, inside
 * WebAssembly on the main thread: at initdb's 128MB that was about 150 ms of each `balcao serve`
 * or CLI command; 32MB costs a quarter of that and still holds a demo's or a test's data.
 */
const EMBEDDED_SHARED_BUFFERS = '32MB';

/** The embedded engine on `dataDir` (or in memory, from `snapshot`), returning the same values as postgres.js. */
async function openEngine(
  { PGlite, types }: typeof import('@electric-sql/pglite'),
  dataDir: string,
  snapshot: Blob | undefined,
): Promise<PGlite> {
  return PGlite.create({
    dataDir: dataDir.startsWith('memory://') ? undefined : dataDir,
    loadDataDir: dataDir.startsWith('memory://') ? snapshot : undefined,
    pgliteWasmModule: await compileEngine(),
    startParams: [
      ...PGlite.defaultStartParams,
      ...['-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`, '-c', 'TimeZone=UTC'],
      // A dump is taken of a running database, so opening one recovers it; PGlite re-arms the recovery's
      // progress timer for ever, which would keep the process alive.
      ...(snapshot ? ['-c', 'log_startup_progress_interval=0'] : []),
    ],
    parsers: {
      [types.INT8]: toNumber,
      [types.NUMERIC]: toNumber,
      [types.DATE]: asIs,
      [OID.time]: asIs,
      [OID.timestamptz]: isoTimestamp,
    },
  });
}

async function startPglite(dataDir: string, holder: string, snapshot?: Blob): Promise<{ database: Database; open: Promise<void> }> {
  let lock: DataDirLock | undefined;
  if (!dataDir.startsWith('memory://')) lock = await acquireDataDirLock(dataDir, holder);
  try {
    const [pglite, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')]);
    const opening = openEngine(pglite, dataDir, snapshot);
    // Reported through `open`; these other uses of it must not make it an unhandled rejection.
    opening.catch(() => {});
    let pg: PGlite | undefined;
    const open = opening.then((opened) => {
      pg = opened;
    });
    const db = new Kysely<DB>({
      dialect: traceableDialect(
        deferredDialect(
          new PGliteDialect(undefined as unknown as PGlite),
          opening.then((opened) => new PGliteDialect(opened)),
        ),
      ),
    });
    return {
      open,
      database: {
        db,
        engine: 'pglite',
        listen: async (channel, onPayload) => (await opening).listen(channel, onPayload),
        get driver(): DatabaseDriver {
          if (!pg) throw new Error('the embedded database is not open yet');
          return { engine: 'pglite', pg };
        },
        close: async () => {
          try {
            await db.destroy();
            // Closed by Kysely's driver when a query ran; otherwise here, once it has finished opening.
            const opened = await opening.catch(() => undefined);
            if (opened && !opened.closed) await opened.close();
          } finally {
            lock?.release();
          }
        },
      },
    };
  } catch (err) {
    lock?.release();
    throw err;
  }
}
