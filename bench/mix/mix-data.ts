// The many-account dataset: ACCOUNTS accounts whose sizes follow a Zipf-like law (the account of rank r has
// LARGEST / r customers, at least MIN_CUSTOMERS, and twice as many sales, each with 2 items and a status entry),
// loaded with set-based SQL (generate_series), not through HTTP or the import: a full load is minutes, not hours.
// Every id and timestamp is a function of (account rank, row number), so the traffic generator and pgbench can
// name rows without reading them back. The load goes into a template database kept in the bench's cluster;
// each run copies it (CREATE DATABASE … TEMPLATE), so every run starts from the same rows and no earlier run's
// writes, and no replication slot (Balcão makes its own on first start in the copy).
import fs from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { MODULES } from '../../src/domain/modules.ts';
import { openDatabase } from '../../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../../src/events/capture/setup.ts';

export const ACCOUNTS = 1000;
const LARGEST = 100_000;
const MIN_CUSTOMERS = 20;
/** Every tenth account (ranks 1, 11, 21, …) has a webhook endpoint. */
export const hasWebhook = (rank: number) => rank % 10 === 1;

/** Customers of the account of rank `rank` (1 = largest) at this scale. */
export const customersOf = (rank: number, scale: number) => Math.max(MIN_CUSTOMERS, Math.round((LARGEST * scale) / rank));
export const salesOf = (rank: number, scale: number) => 2 * customersOf(rank, scale);

const hex12 = (n: number) => n.toString(16).padStart(12, '0');
/** Row ids: a version-4 UUID whose last group numbers the row (rank × 10⁹ + row), one prefix per table. */
export const accountId = (rank: number) => `10000000-0000-4000-8000-${hex12(rank * 1e9)}`;
export const customerId = (rank: number, i: number) => `00000000-0000-4000-8000-${hex12(rank * 1e9 + i)}`;
export const saleId = (rank: number, i: number) => `00000000-0000-4000-9000-${hex12(rank * 1e9 + i)}`;
/** The same ids spelled in SQL over columns/parameters `rank` and `i` (used by the load and by pgbench). */
export const sqlId = (prefix: string, rank: string, i: string) =>
  `cast('${prefix}' || lpad(to_hex(cast(${rank} as bigint) * 1000000000 + ${i}), 12, '0') as uuid)`;
export const CUSTOMER_PREFIX = '00000000-0000-4000-8000-';
export const SALE_PREFIX = '00000000-0000-4000-9000-';
export const ACCOUNT_PREFIX = '10000000-0000-4000-8000-';

/** Row i (1-based) of an account was created (and last updated) at BASE + i minutes (customers) or + i × 30 s (sales). */
const BASE = Date.UTC(2020, 0, 1);
export const customerCreatedAt = (i: number) => new Date(BASE + i * 60_000).toISOString().replace('.000Z', '.000000Z');
/** The record version (versionSql's text) of a loaded, never changed customer or sale. */
export const customerVersion = (i: number) => versionText(new Date(BASE + i * 60_000));
export const saleVersion = (i: number) => versionText(new Date(BASE + i * 30_000));
const versionText = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}000000`;

export interface MixDataset {
  scale: number;
  template: string;
  /** One key (scopes *:read and *:write) per account, by rank - 1. */
  keys: string[];
  loadSeconds: number;
}

const UNLIMITED = { burst_per_second: 1e9, requests_per_minute_read: 1e9, requests_per_minute_write: 1e9, requests_per_day_total: 1e9 };

/** The template database of this scale in the cluster at `adminUrl`, loaded unless `dir` records it already. */
export async function ensureMixTemplate(adminUrl: string, dir: string, scale: number): Promise<MixDataset> {
  const template = `balcao_mix_${String(scale).replace('.', '_')}`;
  const metaFile = path.join(dir, `${template}.json`);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    if (fs.existsSync(metaFile)) {
      const [found] = await admin`SELECT 1 FROM pg_database WHERE datname = ${template}`;
      if (found) return JSON.parse(fs.readFileSync(metaFile, 'utf8')) as MixDataset;
    }
    const started = performance.now();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${template}`);
    await admin.unsafe(`CREATE DATABASE ${template}`);
    const url = new URL(adminUrl);
    url.pathname = `/${template}`;
    const database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://' });
    try {
      await prepareDatabase(database);
    } finally {
      await database.close();
    }
    const keys = await load(url.toString(), scale);
    const meta: MixDataset = { scale, template, keys, loadSeconds: (performance.now() - started) / 1000 };
    fs.writeFileSync(metaFile, JSON.stringify(meta));
    return meta;
  } finally {
    await admin.end();
  }
}

async function load(url: string, scale: number): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const ranks = Array.from({ length: ACCOUNTS }, (_, k) => k + 1);
    // Accounts: the hundred largest on the enterprise plan, the others on pro; limits far above what the bench sends.
    await sql.unsafe(
      `INSERT INTO accounts (id, name, plan_code, modules, burst_per_second, requests_per_minute_read, requests_per_minute_write, requests_per_day_total)
       SELECT ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'mix ' || r, CASE WHEN r <= 100 THEN 'enterprise' ELSE 'pro' END, $1::text[], $2, $2, $2, $2
       FROM generate_series(1, ${ACCOUNTS}) AS r`,
      [[...MODULES], UNLIMITED.burst_per_second],
    );
    const keys = ranks.map(() => generateApiKey('balcao', 'live'));
    await sql.unsafe(
      `INSERT INTO api_keys (account_id, name, mode, secret_hash, last4, scopes)
       SELECT a, 'mix', 'live', h, l, ARRAY['*:read', '*:write'] FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(a, h, l)`,
      [ranks.map(accountId), keys.map((k) => k.hash), keys.map((k) => k.last4)],
    );
    const sizes = `unnest($1::int[], $2::int[]) AS s(r, n)`;
    const params = [ranks, ranks.map((r) => customersOf(r, scale))];
    await sql.unsafe(
      `INSERT INTO customers (id, team_id, mode, full_name, email, phone, is_active, address_city, address_state, created_at, updated_at)
       SELECT ${sqlId(CUSTOMER_PREFIX, 'r', 'i')}, ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'live',
              (ARRAY['Ana','Bruno','Carla','Daniel','Eduarda','Felipe','Gabriela','Heitor','Isabela','João','Larissa','Mateus'])[1 + i % 12]
                || ' ' || (ARRAY['Silva','Santos','Oliveira','Souza','Lima','Pereira','Costa','Almeida'])[1 + (i / 16) % 8] || ' ' || i,
              'cliente' || i || '@conta' || r || '.example.com.br', '+55 11 9' || lpad(cast(i % 100000000 as text), 8, '0'),
              i % 20 <> 0, 'São Paulo', 'SP', t, t
       FROM ${sizes}, generate_series(1, n) AS i, LATERAL (SELECT timestamptz '2020-01-01 00:00:00+00' + i * interval '1 minute' AS t) AS at`,
      params,
    );
    const saleSizes = [ranks, ranks.map((r) => salesOf(r, scale))];
    await sql.unsafe(
      `INSERT INTO transactions (id, team_id, mode, customer_id, transaction_type, transaction_number, status, sale_date, subtotal,
                                 discount_amount, total_amount, payment_method, payment_status, is_active, created_at, updated_at)
       SELECT ${sqlId(SALE_PREFIX, 'r', 'i')}, ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'live', ${sqlId(CUSTOMER_PREFIX, 'r', '1 + i % (n / 2)')},
              'sale', cast(i as text), CASE WHEN i % 5 = 0 THEN 'pending' ELSE 'completed' END, t, 50 + i % 200, 0, 50 + i % 200,
              'pix', 'paid', true, t, t
       FROM ${sizes}, generate_series(1, n) AS i, LATERAL (SELECT timestamptz '2020-01-01 00:00:00+00' + i * interval '30 seconds' AS t) AS at`,
      saleSizes,
    );
    await sql.unsafe(
      `INSERT INTO transaction_items (team_id, mode, transaction_id, catalog_type, catalog_item_id, quantity, unit_price, subtotal, total_amount, created_at)
       SELECT ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'live', ${sqlId(SALE_PREFIX, 'r', 'i')}, 'product',
              ${sqlId(CUSTOMER_PREFIX, '0', '1 + (i + k) % 500')}, 1, 25 + i % 100, 25 + i % 100, 25 + i % 100,
              timestamptz '2020-01-01 00:00:00+00' + i * interval '30 seconds' + k * interval '1 microsecond'
       FROM ${sizes}, generate_series(1, n) AS i, generate_series(1, 2) AS k`,
      saleSizes,
    );
    await sql.unsafe(
      `INSERT INTO transaction_status_history (team_id, mode, transaction_id, old_status, new_status, created_at)
       SELECT ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'live', ${sqlId(SALE_PREFIX, 'r', 'i')}, NULL,
              CASE WHEN i % 5 = 0 THEN 'pending' ELSE 'completed' END, timestamptz '2020-01-01 00:00:00+00' + i * interval '30 seconds'
       FROM ${sizes}, generate_series(1, n) AS i`,
      saleSizes,
    );
    // Webhook endpoints: their url is set to the run's receiver at each run (it listens on a new port).
    await sql.unsafe(
      `INSERT INTO webhook_endpoints (team_id, mode, url, enabled_events, enabled, secret)
       SELECT ${sqlId(ACCOUNT_PREFIX, 'r', '0')}, 'live', 'http://127.0.0.1:9/hook', ARRAY['*'], true, 'whsec_' || md5(cast(r as text))
       FROM generate_series(1, ${ACCOUNTS}) AS r WHERE r % 10 = 1`,
    );
    await sql.unsafe('VACUUM ANALYZE');
    return keys.map((k) => k.key);
  } finally {
    await sql.end();
  }
}

/** A copy of the template for one run; `drop` removes it (and the replication slot Balcão made in it). */
export async function runDatabase(adminUrl: string, template: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${template}_run_${process.pid}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      // A stopped server's walsender may still hold its slot for a moment: at most 10 s.
      for (let i = 0; i < 100; i++) {
        const [held] = await admin`SELECT 1 FROM pg_replication_slots WHERE database = ${name} AND active`;
        if (!held) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await admin`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = ${name} AND NOT active`;
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
