// How fast `balcao import` loads customers beside a raw COPY of the same rows into the same
// table (with its indexes), and how much memory it takes: each load runs in its own process on
// its own fresh database, so its peak RSS is its own. Then sales with items and history.
// Run alone: node --import tsx bench/import.ts [rows]   (default 100000; at most 2000000)
// PostgreSQL when DATABASE_URL is set (fresh databases are created and dropped), else PGlite on disk.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { type Database, openDatabase } from '../src/infra/db/database.ts';
import { migrate } from '../src/infra/db/migrate.ts';
import { findSources } from '../src/import/sources.ts';
import { importSources } from '../src/import/stream-import.ts';

const self = fileURLToPath(import.meta.url);
const CUSTOMER_FIELDS = ['id', 'full_name', 'email', 'phone', 'document', 'is_active', 'address_city', 'address_state', 'created_at'];

const uuid = (prefix: string, n: number) => `${prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const at = (n: number) => new Date(Date.UTC(2020, 0, 1) + n * 1000).toISOString();

function customer(i: number): Record<string, unknown> {
  return {
    id: uuid('0000c001', i),
    full_name: `Cliente ${i} da Silva`,
    email: `cliente${i}@example.com.br`,
    phone: `+55 11 9${String(10_000_000 + (i % 90_000_000)).slice(-8)}`,
    document: null,
    is_active: i % 20 !== 0,
    address_city: 'São Paulo',
    address_state: 'SP',
    created_at: at(i),
  };
}

function sale(i: number): Record<string, unknown> {
  const item = (n: number) => ({
    catalog_type: 'product',
    catalog_item_id: uuid('0000b001', n),
    quantity: 2,
    unit_price: 29.95,
    subtotal: 59.9,
    total_amount: 59.9,
  });
  return {
    id: uuid('0000a001', i),
    transaction_type: 'sale',
    transaction_number: String(i + 1),
    status: 'completed',
    sale_date: at(i),
    subtotal: 119.8,
    total_amount: 119.8,
    payment_method: 'pix',
    created_at: at(i),
    items: [item(i % 500), item((i + 1) % 500)],
    status_history: [{ old_status: null, new_status: 'completed', created_at: at(i) }],
  };
}

/** Writes `rows` lines made by `line` to `file`, streaming (constant memory). */
async function writeLines(file: string, rows: number, line: (i: number) => string, header = ''): Promise<void> {
  async function* lines() {
    if (header) yield header;
    let chunk = '';
    for (let i = 0; i < rows; i++) {
      chunk += line(i);
      if (chunk.length > 1 << 20) {
        yield chunk;
        chunk = '';
      }
    }
    yield chunk;
  }
  await pipeline(Readable.from(lines()), fs.createWriteStream(file));
}

const csvCell = (v: unknown) => (v === null ? '' : typeof v === 'string' && /[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : String(v));
const copyCell = (v: unknown) => (v === null ? '\\N' : typeof v === 'boolean' ? (v ? 't' : 'f') : String(v));

// ---- one load, in a child process: prints {seconds, rows, rssMb} ----
async function freshDatabase(label: string): Promise<{ database: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `balcao-bench-${label}-`));
    const database = await openDatabase({ databaseUrl: undefined, dataDir: dir }, 'bench import');
    await migrate(database.db);
    return { database, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `balcao_bench_${label}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: '' });
  await migrate(database.db);
  return {
    database,
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function runLoad(kind: string, file: string): Promise<void> {
  const { database, drop } = await freshDatabase(kind.replace(/\W/g, ''));
  try {
    const account = await database.db
      .insertInto('accounts')
      .values({ name: 'Bench', plan_code: 'enterprise' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const teamId = String(account.id);
    const started = performance.now();
    let rows = 0;
    if (kind === 'raw-copy') rows = await rawCopy(database, teamId, file);
    else {
      const result = await importSources(database, await findSources(file), { accountId: teamId, mode: 'live' });
      rows = Object.values(result.counts).reduce((a, b) => a + (b ?? 0), 0) + Object.values(result.nested).reduce((a, b) => a + b, 0);
    }
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`${JSON.stringify({ seconds, rows, rssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
  } finally {
    await database.close();
    await drop();
  }
}

/** The baseline: the same customers, already in COPY's text format, copied straight into the table. */
async function rawCopy(database: Database, teamId: string, file: string): Promise<number> {
  const columns = ['team_id', 'mode', ...CUSTOMER_FIELDS].join(', ');
  let rows = 0;
  const lines = (async function* () {
    let rest = '';
    for await (const chunk of fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
      const text = rest + chunk;
      const cut = text.lastIndexOf('\n') + 1;
      rest = text.slice(cut);
      const body = text.slice(0, cut);
      rows += (body.match(/\n/g) ?? []).length;
      yield body.replaceAll('TEAM', teamId);
    }
  })();
  const driver = database.driver;
  if (driver.engine === 'postgres') {
    await driver.sql.begin(async (tx) => {
      await pipeline(Readable.from(lines), await tx.unsafe(`COPY customers (${columns}) FROM STDIN`).writable());
    });
  } else {
    await driver.pg.transaction(async (tx) => {
      for await (const body of lines) await tx.query(`COPY customers (${columns}) FROM '/dev/blob'`, [], { blob: new Blob([body]) });
    });
  }
  return rows;
}

// ---- the bench: files, then each load in its own process ----
function load(kind: string, file: string): { seconds: number; rows: number; rssMb: number } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--load', kind, file], {
    encoding: 'utf8',
    env: process.env,
    timeout: 30 * 60_000,
  });
  if (r.status !== 0) throw new Error(`${kind} load failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) as string);
}

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 100_000);
  if (!Number.isInteger(rows) || rows < 100 || rows > 2_000_000) throw new Error('rows must be an integer between 100 and 2000000');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-import-'));
  try {
    const files = {
      copy: path.join(dir, 'customers.copy'),
      ndjson: path.join(dir, 'customers.ndjson'),
      csv: path.join(dir, 'customers.csv'),
      gz: path.join(dir, 'customers.ndjson.gz'),
      sales: path.join(dir, 'sales.ndjson'),
    };
    await writeLines(files.copy, rows, (i) => `TEAM\tlive\t${CUSTOMER_FIELDS.map((f) => copyCell(customer(i)[f])).join('\t')}\n`);
    await writeLines(files.ndjson, rows, (i) => `${JSON.stringify(customer(i))}\n`);
    await writeLines(
      files.csv,
      rows,
      (i) => `${CUSTOMER_FIELDS.map((f) => csvCell(customer(i)[f])).join(',')}\n`,
      `${CUSTOMER_FIELDS.join(',')}\n`,
    );
    execFileSync('sh', ['-c', `gzip -c "${files.ndjson}" > "${files.gz}"`]);
    const saleCount = Math.max(100, Math.floor(rows / 10));
    await writeLines(files.sales, saleCount, (i) => `${JSON.stringify(sale(i))}\n`);

    const engine = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite on disk';
    const mb = (file: string) => (fs.statSync(file).size / 1_048_576).toFixed(0);
    console.log(
      `import of ${rows.toLocaleString('en')} customers (${mb(files.ndjson)} MiB NDJSON, ${mb(files.csv)} MiB CSV), ${engine}, each load on a fresh database`,
    );
    const raw = load('raw-copy', files.copy);
    const line = (label: string, r: { seconds: number; rows: number; rssMb: number }) =>
      console.log(
        `  ${label.padEnd(26)} ${r.seconds.toFixed(2).padStart(8)} s  ${Math.round(r.rows / r.seconds)
          .toLocaleString('en')
          .padStart(9)} rows/s  ${(raw.seconds / r.seconds).toFixed(2)}× raw COPY  peak RSS ${r.rssMb.toFixed(0)} MB`,
      );
    line('raw COPY (baseline)', raw);
    line('balcao import NDJSON', load('import', files.ndjson));
    line('balcao import CSV', load('import', files.csv));
    line('balcao import NDJSON .gz', load('import', files.gz));
    const sales = load('import', files.sales);
    console.log(
      `  sales with 2 items and 1 history entry: ${saleCount.toLocaleString('en')} sales, ${sales.rows.toLocaleString('en')} rows in ${sales.seconds.toFixed(2)} s (${Math.round(sales.rows / sales.seconds).toLocaleString('en')} rows/s), peak RSS ${sales.rssMb.toFixed(0)} MB`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--load') await runLoad(process.argv[3] as string, process.argv[4] as string);
else await main();
