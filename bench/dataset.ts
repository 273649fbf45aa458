// The benchmark's data, loaded through the product's own import (importObject, in chunks): one
// large account (BENCH_CUSTOMERS customers, default 1 000 000, and a tenth as many sales with
// 3 items and a status history each) and three smaller accounts beside it. The loaded cluster
// is kept in its folder with a meta.json, so a second run with the same size skips loading. What an
// earlier run wrote (its sales, events, write log, Idempotency-Keys) is removed first: every run measures
// the dataset as loaded, not one grown by the runs before it.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { createAccount } from '../src/accounts/account-repository.ts';
import { createKey } from '../src/accounts/key-repository.ts';
import { MODULES } from '../src/domain/modules.ts';
import { importObject } from '../src/import/stream-import.ts';
import { DEFAULT_DB_TIMEOUTS, type Database, openDatabase } from '../src/infra/db/engine/database.ts';
import { IMPORT_ORIGIN, prepareDatabase } from '../src/events/capture/setup.ts';

export interface Dataset {
  customers: number;
  accountId: string;
  readKey: string;
  writeKey: string;
  /** A sale of the large account, for GET /v1/sales/{id}. */
  saleId: string;
  loadSeconds: number;
  /** When the load ended (the database's clock): every row created later is an earlier run's write. */
  loadedAt?: string;
}

/** Tables the benchmark's writes add rows to, children first (foreign keys). */
const WRITTEN_TABLES = [
  'transaction_items',
  'transaction_status_history',
  'transactions',
  'webhook_deliveries',
  'events',
  'request_log',
  'idempotency_keys',
];

/**
 * Deletes the rows created after the dataset was loaded, and vacuums their tables so the space is reused.
 * A kept dataset's write scenarios (POST /v1/sales, status changes) otherwise grow it run after run: on
 * this machine a 20 000-customer dataset had reached 11 GB, and both servers then wrote into indexes far
 * larger than shared_buffers, which moved PostgreSQL's CPU per sale by 0.2 ms (docs/performance.md).
 */
async function forgetEarlierWrites(url: string, loadedAt: string): Promise<number> {
  const database = await openDatabase({ databaseUrl: url, dataDir: 'memory://' });
  try {
    let removed = 0;
    // Marked as an import: the change capture passes over these deletions, which are no account's changes.
    await database.db.transaction().execute(async (trx) => {
      // After a long run the events' deletion (cascading to their deliveries) outlasts a request's timeout.
      await sql`SET LOCAL statement_timeout = 0`.execute(trx);
      await sql`SELECT balcao_mark_origin(${IMPORT_ORIGIN})`.execute(trx);
      for (const table of WRITTEN_TABLES) {
        const result = await sql`DELETE FROM ${sql.table(table)} WHERE created_at > ${loadedAt}`.execute(trx);
        removed += Number(result.numAffectedRows ?? 0);
      }
    });
    // On one connection without the statement timeout: after many runs the vacuum outlasts a request's timeout too.
    if (removed > 0)
      await database.db.connection().execute(async (connection) => {
        await sql`SET statement_timeout = 0`.execute(connection);
        await sql.raw(`VACUUM ANALYZE ${WRITTEN_TABLES.join(', ')}`).execute(connection);
      });
    return removed;
  } finally {
    await database.close();
  }
}

const UNLIMITED = { burst_per_second: 1e9, requests_per_minute_read: 1e9, requests_per_minute_write: 1e9, requests_per_day_total: 1e9 };
const FIRST_NAMES = ['Ana', 'Bruno', 'Carla', 'Daniel', 'Eduarda', 'Felipe', 'Gabriela', 'Heitor', 'Isabela', 'João', 'Larissa', 'Mateus'];
const LAST_NAMES = ['Silva', 'Santos', 'Oliveira', 'Souza', 'Lima', 'Pereira', 'Costa', 'Almeida'];
const CHUNK = 20_000;

const at = (n: number) => new Date(Date.UTC(2020, 0, 1) + n * 60_000 + (n % 997)).toISOString();
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

function customers(from: number, count: number) {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      full_name: `${FIRST_NAMES[i % FIRST_NAMES.length]} ${LAST_NAMES[(i >> 4) % LAST_NAMES.length]} ${i}`,
      email: `cliente${i}@example.com.br`,
      phone: `+55 11 9${String(10_000_000 + (i % 90_000_000)).slice(-8)}`,
      is_active: i % 20 !== 0,
      address_city: 'São Paulo',
      address_state: 'SP',
      created_at: at(i),
    };
  });
}

function sales(from: number, count: number) {
  const item = (i: number, n: number) => ({
    catalog_type: 'product',
    catalog_item_id: uuid(1 + ((i + n) % 500)),
    quantity: 2,
    unit_price: 29.95,
    subtotal: 59.9,
    total_amount: 59.9,
  });
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      transaction_type: 'sale',
      transaction_number: String(i + 1),
      status: 'completed',
      sale_date: at(i),
      subtotal: 179.7,
      discount_amount: 0,
      total_amount: 179.7,
      payment_method: 'pix',
      payment_status: 'paid',
      created_at: at(i),
      items: [item(i, 0), item(i, 1), item(i, 2)],
      status_history: [{ old_status: null, new_status: 'completed', created_at: at(i) }],
    };
  });
}

async function importInChunks(
  database: Database,
  accountId: string,
  total: number,
  make: (from: number, n: number) => unknown[],
  key: string,
) {
  for (let from = 0; from < total; from += CHUNK) {
    const n = Math.min(CHUNK, total - from);
    await importObject(database, { [key]: make(from, n) }, { accountId, mode: 'live' });
    if (total >= 100_000 && (from / CHUNK) % 10 === 9) process.stdout.write(`  ${key}: ${(from + n).toLocaleString('en')}\n`);
  }
}

/** Loads the dataset into the database at `url`, or returns the one recorded in `dir`. */
export async function ensureDataset(url: string, dir: string, customerCount: number): Promise<Dataset> {
  const metaFile = path.join(dir, 'meta.json');
  if (fs.existsSync(metaFile)) {
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as Dataset;
    if (meta.customers === customerCount) {
      // A meta.json of an older benchmark has no loadedAt: it was written as the load ended.
      const loadedAt = meta.loadedAt ?? fs.statSync(metaFile).mtime.toISOString();
      const removed = await forgetEarlierWrites(url, loadedAt);
      if (removed > 0) console.log(`dataset: ${removed.toLocaleString('en')} rows of earlier runs' writes removed`);
      return meta;
    }
  }
  const started = performance.now();
  // The load's statements (a chunk of 20 000 sales with their items, the final VACUUM ANALYZE of a million rows) may
  // take longer than a served request's statement timeout: none applies, as for the operator's commands.
  const database = await openDatabase({ databaseUrl: url, dataDir: 'memory://', dbTimeouts: { ...DEFAULT_DB_TIMEOUTS, statementMs: 0 } });
  const { db } = database;
  try {
    await prepareDatabase(database);
    const large = await createAccount(db, {
      name: 'bench large',
      plan_code: 'enterprise',
      modules: [...MODULES],
      rate_limit_overrides: UNLIMITED,
    });
    const key = async (accountId: string, scopes: string[]) =>
      (await createKey(db, { accountId, name: scopes[0]!, mode: 'live', scopes, allowedIps: [], expiresAt: null, brand: 'balcao' })).key;
    const readKey = await key(large.id, ['*:read']);
    const writeKey = await key(large.id, ['*:write']);
    // Smaller accounts first, so the large account's rows are not all at one end of the table.
    for (let a = 0; a < 3; a++) {
      const small = await createAccount(db, { name: `bench small ${a}`, plan_code: 'pro', modules: [...MODULES] });
      await importInChunks(database, small.id, Math.ceil(customerCount / 20), customers, 'customers');
      await importInChunks(database, small.id, Math.ceil(customerCount / 200), sales, 'sales');
    }
    await importInChunks(database, large.id, customerCount, customers, 'customers');
    await importInChunks(database, large.id, Math.ceil(customerCount / 10), sales, 'sales');
    await sql`VACUUM ANALYZE`.execute(db);
    const sale = await sql<{
      id: string;
    }>`SELECT id FROM transactions WHERE team_id = ${large.id} ORDER BY created_at DESC LIMIT 1`.execute(db);
    const loaded = await sql<{ at: string }>`SELECT cast(now() as text) AS at`.execute(db);
    const meta: Dataset = {
      customers: customerCount,
      loadedAt: loaded.rows[0]!.at,
      accountId: large.id,
      readKey,
      writeKey,
      saleId: sale.rows[0]!.id,
      loadSeconds: (performance.now() - started) / 1000,
    };
    fs.writeFileSync(metaFile, JSON.stringify(meta));
    return meta;
  } finally {
    await database.close();
  }
}
