// One query layer over both engines: Kysely with postgres.js (PostgreSQL) or PGlite (embedded).
// Both drivers are set to return the same JS values: numeric → number, date/time → the
// string PostgreSQL prints, timestamptz → Date, bigint → number.
import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import postgres from 'postgres';
import { type Config, DEFAULT_DB_POOL_SIZE } from '../../config.ts';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.ts';
import { PostgresJsDialect } from './postgres-dialect.ts';

/** Rows of account-owned tables are dynamic (the resource engine is descriptor driven). */
export type Db = Kysely<any>;

export interface Database {
  readonly db: Db;
  readonly engine: 'postgres' | 'pglite';
  /** The driver under Kysely, for what Kysely cannot do (COPY, used by the bulk import). */
  readonly driver: DatabaseDriver;
  close(): Promise<void>;
}

export type DatabaseDriver = { engine: 'postgres'; sql: postgres.Sql } | { engine: 'pglite'; pg: PGlite };

const OID = { int8: 20, numeric: 1700, date: 1082, time: 1083, timestamptz: 1184, timestamp: 1114 } as const;

const toNumber = (v: string) => (v === null ? null : Number(v));
const asIs = (v: string) => v;

export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'dbPoolSize'>>,
  holder = 'balcao',
): Promise<Database> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, config.dbPoolSize ?? DEFAULT_DB_POOL_SIZE);
  return openPglite(config.dataDir, holder);
}

function openPostgres(url: string, poolSize: number): Database {
  const sql = postgres(url, {
    max: poolSize,
    onnotice: () => {},
    connection: { TimeZone: 'UTC', application_name: 'balcao' },
    types: {
      bigint: { to: OID.int8, from: [OID.int8], serialize: String, parse: toNumber },
      numeric: { to: OID.numeric, from: [OID.numeric], serialize: String, parse: toNumber },
      date: { to: OID.date, from: [OID.date, OID.time], serialize: String, parse: asIs },
    },
  });
  const db = new Kysely({ dialect: new PostgresJsDialect(sql) });
  return {
    db,
    engine: 'postgres',
    driver: { engine: 'postgres', sql },
    close: () => db.destroy(),
  };
}

async function openPglite(dataDir: string, holder: string): Promise<Database> {
  let lock: DataDirLock | undefined;
  if (!dataDir.startsWith('memory://')) lock = await acquireDataDirLock(dataDir, holder);
  try {
    const pg = await PGlite.create({
      dataDir: dataDir.startsWith('memory://') ? undefined : dataDir,
      parsers: {
        [pgliteTypes.INT8]: toNumber,
        [pgliteTypes.NUMERIC]: toNumber,
        [pgliteTypes.DATE]: asIs,
        [OID.time]: asIs,
      },
    });
    await pg.exec("SET TIME ZONE 'UTC'");
    const db = new Kysely({ dialect: new PGliteDialect(pg) });
    return {
      db,
      engine: 'pglite',
      driver: { engine: 'pglite', pg },
      close: async () => {
        await db.destroy();
        lock?.release();
      },
    };
  } catch (err) {
    lock?.release();
    throw err;
  }
}
