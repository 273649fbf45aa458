// Test data for the read API, inserted straight into the tables (as an import would), with the
// NOT NULL columns of each table defaulted so a test names only what it is about.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../src/infra/db/engine/database.ts';
import { byTableName } from './harness.ts';

export interface Tenant {
  accountId: string;
  mode: 'live' | 'test';
}

type Row = Record<string, unknown>;

const DEFAULTS: Record<string, () => Row> = {
  customers: () => ({ full_name: 'cliente' }),
  transactions: () => ({ transaction_type: 'sale' }),
  transaction_items: () => ({
    catalog_type: 'product',
    catalog_item_id: randomUUID(),
    quantity: 1,
    unit_price: 10,
    subtotal: 10,
    total_amount: 10,
  }),
  transaction_status_history: () => ({ new_status: 'pending' }),
  suppliers: () => ({}),
  expenses: () => ({ expense_number: 'E-1', expense_type: 'fixa', description: 'aluguel', original_amount: 100, final_amount: 100 }),
  recurring_expenses: () => ({
    expense_template_id: randomUUID(),
    recurrence_frequency: 'monthly',
    start_date: '2026-01-01',
    next_generation_date: '2026-02-01',
  }),
  appointments: () => ({
    customer_id: randomUUID(),
    appointment_date: '2026-03-01',
    start_time: '09:00:00',
    end_time: '10:00:00',
    status: 'scheduled',
  }),
  services: () => ({ name: 'corte', duration_minutes: 30 }),
  catalog_items: () => ({ name: 'produto' }),
  inventory_items: () => ({ name: 'item' }),
  bank_accounts: () => ({ account_name: 'caixa' }),
  deal_stages: () => ({ name: 'novo', position: 1 }),
  deals: () => ({ customer_id: randomUUID(), stage_id: randomUUID(), status: 'open', origin_channel: 'whatsapp' }),
};

const ISO_TEXT = /^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/;

/** postgres.js would send a timestamp string through Date (milliseconds); text keeps microseconds. */
function withExactTimestamps(row: Row): Row {
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && ISO_TEXT.test(v) ? sql`cast(${v}::text as timestamptz)` : v]),
  );
}

/** Inserts rows into `table` for the tenant and returns them as stored (ids included). */
export async function insertRows(db: Db, table: string, tenant: Tenant, rows: Row[]): Promise<Row[]> {
  const base = DEFAULTS[table];
  if (!base) throw new Error(`no defaults for ${table}`);
  if (rows.length === 0) return [];
  const values = rows.map((r) => ({ ...base(), ...withExactTimestamps(r), team_id: tenant.accountId, mode: tenant.mode }));
  const out: Row[] = [];
  for (let i = 0; i < values.length; i += 500) {
    out.push(
      ...((await byTableName(db)
        .insertInto(table)
        .values(values.slice(i, i + 500))
        .returningAll()
        .execute()) as Row[]),
    );
  }
  return out;
}

export const insertRow = async (db: Db, table: string, tenant: Tenant, row: Row = {}): Promise<Row> =>
  (await insertRows(db, table, tenant, [row]))[0] as Row;

/** Every page of a list, following next_cursor; returns the items and the pages seen. */
export async function readAll(
  request: (path: string) => Promise<{ status: number; body: any }>,
  path: string,
): Promise<{ items: Row[]; pages: number }> {
  const items: Row[] = [];
  let cursor: string | null = null;
  let pages = 0;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const res = await request(cursor ? `${path}${sep}cursor=${cursor}` : path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    pages += 1;
    items.push(...res.body.data);
    cursor = res.body.pagination.next_cursor;
    if ((cursor === null) === res.body.pagination.has_more) throw new Error('has_more and next_cursor disagree');
    if (pages > 10_000) throw new Error('runaway traversal');
  } while (cursor);
  return { items, pages };
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
export const TIME_ONLY = /^\d{2}:\d{2}:\d{2}$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Rate limits out of the way: these tests walk lists as fast as the machine allows. */
export const UNLIMITED = {
  rateLimits: {
    burst_per_second: 1_000_000,
    requests_per_minute_read: 1_000_000,
    requests_per_minute_write: 1_000_000,
    requests_per_day_total: 100_000_000,
  },
};

/** The table behind each list resource, written out here so that the tests check the descriptors against it. */
export const TABLES: Record<string, string> = {
  customers: 'customers',
  sales: 'transactions',
  suppliers: 'suppliers',
  expenses: 'expenses',
  appointments: 'appointments',
  services: 'services',
  products: 'catalog_items',
  inventory: 'inventory_items',
  'bank-accounts': 'bank_accounts',
  deals: 'deals',
};
