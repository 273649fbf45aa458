// How fast the built `balcao import` (node bin/balcao.js) loads customers from one NDJSON file and
// one CSV file beside a raw COPY of the same rows into the same table (with its indexes), and its
// peak RSS: each load runs in its own process on its own fresh database. Then sales with items
// and history. Part of `npm run bench` (BENCH_PART=import runs this part alone).
//   node --import tsx bench/import.ts [rows]      rows: default BENCH_IMPORT_ROWS or 1000000 (at most 2000000)
// The database: a throwaway PostgreSQL of its own (bench/throwaway-servers.ts); DATABASE_URL to use
// an existing server instead (fresh databases are created and dropped); BENCH_IMPORT_ENGINE=pglite
// for the embedded database on disk. BENCH_IMPORT_GZIP=1 adds a gzipped NDJSON load.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { freshDatabase, startPostgres } from './throwaway-servers.ts';

const self = fileURLToPath(import.meta.url);
const CLI = path.join(path.dirname(self), '..', 'bin', 'balcao.js');
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

const SALE_FIELDS = [
  'id',
  'transaction_type',
  'transaction_number',
  'status',
  'sale_date',
  'subtotal',
  'total_amount',
  'payment_method',
  'created_at',
];
const ITEM_FIELDS = [
  'transaction_id',
  'catalog_type',
  'catalog_item_id',
  'quantity',
  'unit_price',
  'subtotal',
  'total_amount',
  'created_at',
];
const HISTORY_FIELDS = ['transaction_id', 'old_status', 'new_status', 'created_at'];

/** A sale's rows as COPY text, per table: what the import of sale(i) writes, for the raw COPY beside it. */
function saleCopyLines(i: number): { sale: string; items: string; history: string } {
  const s = sale(i);
  const line = (fields: readonly string[], row: Record<string, unknown>) =>
    `TEAM\tlive\t${fields.map((f) => copyCell(row[f])).join('\t')}\n`;
  const items = (s.items as Record<string, unknown>[]).map((item) =>
    line(ITEM_FIELDS, { ...item, transaction_id: s.id, created_at: s.created_at }),
  );
  const history = (s.status_history as Record<string, unknown>[]).map((h) => line(HISTORY_FIELDS, { ...h, transaction_id: s.id }));
  return { sale: line(SALE_FIELDS, s), items: items.join(''), history: history.join('') };
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

// ---- the databases: each load on a fresh one ----
interface Target {
  /** The environment `balcao` reads (DATABASE_URL or BALCAO_DATA_DIR). */
  env: Record<string, string>;
  drop(): Promise<void>;
}

type Fresh = (label: string) => Promise<Target>;

async function postgresTargets(adminUrl: string): Promise<Fresh> {
  return async (label) => {
    const { url, drop } = await freshDatabase(adminUrl, label);
    return { env: { DATABASE_URL: url }, drop };
  };
}

function pgliteTargets(root: string): Fresh {
  return async (label) => {
    const dir = fs.mkdtempSync(path.join(root, `pglite-${label}-`));
    return { env: { BALCAO_DATA_DIR: dir }, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  };
}

function cli(env: Record<string, string>, args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`balcao ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

/** A migrated fresh database with one account. */
async function prepare(fresh: Fresh, label: string): Promise<{ target: Target; accountId: string }> {
  const target = await fresh(label);
  cli(target.env, ['migrate']);
  const account = JSON.parse(cli(target.env, ['accounts', 'create', '--name', 'Bench', '--plan', 'enterprise', '--json']));
  return { target, accountId: account.id };
}

interface Load {
  seconds: number;
  rows: number;
  rssMb: number;
}

/** Runs a process to its end, sampling its peak RSS (VmHWM) from /proc. */
async function timed(args: string[], env: Record<string, string>): Promise<{ seconds: number; rssMb: number; stdout: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  let peakKb = 0;
  const sample = () => {
    try {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      // exited
    }
  };
  const sampler = setInterval(sample, 50);
  const deadline = setTimeout(() => child.kill('SIGKILL'), 30 * 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearInterval(sampler);
  clearTimeout(deadline);
  if (code !== 0) throw new Error(`${args.join(' ')} failed (${code}): ${stderr}`);
  return { seconds: (performance.now() - started) / 1000, rssMb: peakKb / 1024, stdout };
}

async function importLoad(fresh: Fresh, file: string): Promise<Load> {
  const { target, accountId } = await prepare(fresh, 'import');
  try {
    const run = await timed([CLI, 'import', '--account', accountId, file, '--json'], target.env);
    const result = JSON.parse(run.stdout) as { counts: Record<string, number>; nested: Record<string, number> };
    const rows = [...Object.values(result.counts), ...Object.values(result.nested)].reduce((a, b) => a + b, 0);
    return { seconds: run.seconds, rows, rssMb: run.rssMb };
  } finally {
    await target.drop();
  }
}

/** One table's rows for the raw COPY: a file already in COPY's text format, its account written `TEAM`. */
interface CopyFile {
  table: string;
  columns: readonly string[];
  file: string;
}

async function rawCopyLoad(fresh: Fresh, files: readonly CopyFile[]): Promise<Load> {
  const { target, accountId } = await prepare(fresh, 'copy');
  try {
    const run = await timed(['--import', 'tsx', self, '--raw-copy', accountId, JSON.stringify(files)], target.env);
    // The COPY's own time (connection to commit), without the process's start: the import is timed whole.
    const { rows, seconds } = JSON.parse(run.stdout) as { rows: number; seconds: number };
    return { seconds, rows, rssMb: run.rssMb };
  } finally {
    await target.drop();
  }
}

/** The baseline, in its own process: rows already in COPY's text format, copied straight into their tables
 *  (in the order given: parents first), in one transaction. */
async function rawCopy(accountId: string, files: readonly CopyFile[]): Promise<void> {
  const started = performance.now();
  let rows = 0;
  const linesOf = async function* (file: string) {
    let rest = '';
    for await (const chunk of fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
      const text = rest + chunk;
      const cut = text.lastIndexOf('\n') + 1;
      rest = text.slice(cut);
      const body = text.slice(0, cut);
      rows += (body.match(/\n/g) ?? []).length;
      yield body.replaceAll('TEAM', accountId);
    }
  };
  const columnsOf = (f: CopyFile) => ['team_id', 'mode', ...f.columns].join(', ');
  if (process.env.DATABASE_URL) {
    const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    await sql.begin(async (tx) => {
      for (const f of files)
        await pipeline(Readable.from(linesOf(f.file)), await tx.unsafe(`COPY ${f.table} (${columnsOf(f)}) FROM STDIN`).writable());
    });
    await sql.end();
  } else {
    const { PGlite } = await import('@electric-sql/pglite');
    const pg = await PGlite.create({ dataDir: process.env.BALCAO_DATA_DIR });
    await pg.transaction(async (tx) => {
      for (const f of files)
        for await (const body of linesOf(f.file))
          await tx.query(`COPY ${f.table} (${columnsOf(f)}) FROM '/dev/blob'`, [], { blob: new Blob([body]) });
    });
    await pg.close();
  }
  process.stdout.write(`${JSON.stringify({ rows, seconds: (performance.now() - started) / 1000 })}\n`);
}

// ---- the bench: files, then each load in its own process ----
async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? process.env.BENCH_IMPORT_ROWS ?? 1_000_000);
  if (!Number.isInteger(rows) || rows < 100 || rows > 2_000_000) throw new Error('rows must be an integer between 100 and 2000000');
  if (!fs.existsSync(path.join(path.dirname(CLI), '..', 'dist', 'cli', 'main.js'))) throw new Error('run `npm run build` first');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-import-'));
  const pglite = process.env.BENCH_IMPORT_ENGINE === 'pglite';
  // The server's folder is its own (the postgres user owns it; the data files' folder is private to this process).
  const serverDir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-import-pg-'));
  let stopServer = () => {};
  try {
    let fresh: Fresh;
    let engine: string;
    if (pglite) {
      fresh = pgliteTargets(dir);
      engine = 'PGlite on disk';
    } else if (process.env.DATABASE_URL) {
      fresh = await postgresTargets(process.env.DATABASE_URL);
      engine = 'PostgreSQL at DATABASE_URL';
    } else {
      const server = await startPostgres(serverDir);
      stopServer = server.stop;
      fresh = await postgresTargets(server.url);
      engine = 'a throwaway PostgreSQL 15';
    }
    const files = {
      copy: path.join(dir, 'customers.copy'),
      ndjson: path.join(dir, 'customers.ndjson'),
      csv: path.join(dir, 'customers.csv'),
      gz: path.join(dir, 'customers.ndjson.gz'),
      sales: path.join(dir, 'sales.ndjson'),
      salesCopy: path.join(dir, 'sales.copy'),
      itemsCopy: path.join(dir, 'items.copy'),
      historyCopy: path.join(dir, 'history.copy'),
    };
    await writeLines(files.copy, rows, (i) => `TEAM\tlive\t${CUSTOMER_FIELDS.map((f) => copyCell(customer(i)[f])).join('\t')}\n`);
    await writeLines(files.ndjson, rows, (i) => `${JSON.stringify(customer(i))}\n`);
    await writeLines(
      files.csv,
      rows,
      (i) => `${CUSTOMER_FIELDS.map((f) => csvCell(customer(i)[f])).join(',')}\n`,
      `${CUSTOMER_FIELDS.join(',')}\n`,
    );
    const saleCount = Math.max(100, Math.floor(rows / 10));
    await writeLines(files.sales, saleCount, (i) => `${JSON.stringify(sale(i))}\n`);
    await writeLines(files.salesCopy, saleCount, (i) => saleCopyLines(i).sale);
    await writeLines(files.itemsCopy, saleCount, (i) => saleCopyLines(i).items);
    await writeLines(files.historyCopy, saleCount, (i) => saleCopyLines(i).history);
    const customersCopy: CopyFile[] = [{ table: 'customers', columns: CUSTOMER_FIELDS, file: files.copy }];
    const salesCopy: CopyFile[] = [
      { table: 'transactions', columns: SALE_FIELDS, file: files.salesCopy },
      { table: 'transaction_items', columns: ITEM_FIELDS, file: files.itemsCopy },
      { table: 'transaction_status_history', columns: HISTORY_FIELDS, file: files.historyCopy },
    ];

    const mb = (file: string) => (fs.statSync(file).size / 1_048_576).toFixed(0);
    console.log(
      `import of ${rows.toLocaleString('en')} customers (${mb(files.ndjson)} MiB NDJSON, ${mb(files.csv)} MiB CSV) by the built CLI, ${engine}, each load in its own process on a fresh database`,
    );
    const rate = (r: Load) =>
      Math.round(r.rows / r.seconds)
        .toLocaleString('en')
        .padStart(9);
    const line = (label: string, r: Load, ratio: string) =>
      console.log(
        `  ${label.padEnd(28)} ${r.seconds.toFixed(2).padStart(8)} s  ${rate(r)} rows/s  ${ratio.padEnd(16)} peak RSS ${r.rssMb.toFixed(0)} MB`,
      );
    // The baseline runs before and after the imports; each import is compared with their mean, as the machine's load drifts.
    const before = await rawCopyLoad(fresh, customersCopy);
    line('raw COPY (before)', before, '');
    const loads: [string, Load][] = [
      ['balcao import NDJSON', await importLoad(fresh, files.ndjson)],
      ['balcao import CSV', await importLoad(fresh, files.csv)],
    ];
    if (process.env.BENCH_IMPORT_GZIP === '1') {
      execFileSync('sh', ['-c', `gzip -c "${files.ndjson}" > "${files.gz}"`]);
      loads.push(['balcao import NDJSON .gz', await importLoad(fresh, files.gz)]);
    }
    const after = await rawCopyLoad(fresh, customersCopy);
    const baseline = (before.seconds + after.seconds) / 2;
    for (const [label, load] of loads) line(label, load, `${(baseline / load.seconds).toFixed(2)}× raw COPY`);
    line('raw COPY (after)', after, '');
    const sales = await importLoad(fresh, files.sales);
    const salesRaw = await rawCopyLoad(fresh, salesCopy);
    console.log(
      `  sales with 2 items and 1 history entry: ${saleCount.toLocaleString('en')} sales, ${sales.rows.toLocaleString('en')} rows`,
    );
    line('balcao import sales NDJSON', sales, `${(salesRaw.seconds / sales.seconds).toFixed(2)}× raw COPY`);
    line('raw COPY of the same rows', salesRaw, '');
    console.log('  (ratio: import speed ÷ raw COPY speed, the COPY timed before and after the imports; RSS sampled from /proc)');
  } finally {
    stopServer();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(serverDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--raw-copy') await rawCopy(process.argv[3] as string, JSON.parse(process.argv[4] as string) as CopyFile[]);
else await main();
