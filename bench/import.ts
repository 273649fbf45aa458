// How long `balcao import` takes to load 100 000 records into the embedded database (PGlite on
// disk, the default): read + parse, validate, write. Bounded: one file, one import.
// Run: node --import tsx bench/import.ts [records]   (default 100000)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrate } from '../src/infra/db/migrate.ts';
import { importData } from '../src/import/import-data.ts';

const RECORDS = Math.min(Number(process.argv[2] ?? 100_000), 1_000_000);
if (!Number.isInteger(RECORDS) || RECORDS < 100) throw new Error('records must be an integer of at least 100');

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const at = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 60_000).toISOString();

/** A mix like a real account's: customers, sales with two items and a history each, suppliers, expenses, products. */
function buildFile(records: number) {
  const share = (fraction: number) => Math.floor(records * fraction);
  const products = share(0.05);
  const file = {
    customers: Array.from({ length: share(0.35) }, (_, i) => ({
      full_name: `Cliente ${i} da Silva`,
      email: `cliente${i}@example.com.br`,
      phone: `+55 11 9${String(10_000_000 + i).slice(-8, -4)}-${String(i).padStart(4, '0').slice(-4)}`,
      document: null,
      is_active: i % 20 !== 0,
      address_city: 'São Paulo',
      address_state: 'SP',
      created_at: at(i),
    })),
    sales: Array.from({ length: share(0.25) }, (_, i) => ({
      transaction_type: i % 5 === 0 ? 'order' : 'sale',
      transaction_number: String(i + 1),
      status: 'completed',
      sale_date: at(i),
      subtotal: 119.8,
      discount_amount: 0,
      total_amount: 119.8,
      payment_method: 'pix',
      payment_status: 'paid',
      created_at: at(i),
      items: [
        {
          catalog_type: 'product',
          catalog_item_id: uuid(1 + (i % products)),
          quantity: 2,
          unit_price: 29.95,
          subtotal: 59.9,
          total_amount: 59.9,
        },
        {
          catalog_type: 'service',
          catalog_item_id: uuid(2 + (i % products)),
          quantity: 1,
          unit_price: 59.9,
          subtotal: 59.9,
          total_amount: 59.9,
        },
      ],
      status_history: [{ old_status: null, new_status: 'completed', created_at: at(i) }],
    })),
    suppliers: Array.from({ length: share(0.1) }, (_, i) => ({
      name: `Fornecedor ${i}`,
      legal_name: `Fornecedor ${i} Ltda`,
      document_number: '11.222.333/0001-81',
      pix_keys: [{ type: 'cnpj', key: '11222333000181' }],
    })),
    expenses: Array.from({ length: share(0.25) }, (_, i) => ({
      expense_number: `DESP-${i}`,
      expense_type: 'stock',
      description: 'Compra de mercadorias',
      original_amount: 150.5,
      final_amount: 150.5,
      status: 'paid',
      due_date: '2025-03-05',
      payment_date: '2025-03-05',
      tags: ['estoque'],
    })),
    products: Array.from({ length: products }, (_, i) => ({
      id: uuid(1 + i),
      name: `Produto ${i}`,
      selling_price: 29.95,
      cost_price: 15,
      current_stock: 10,
    })),
  };
  const count = Object.values(file).reduce((sum, list) => sum + list.length, 0);
  return { file, count };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-import-'));
const database = await openDatabase({ databaseUrl: undefined, dataDir: path.join(dir, 'data') }, 'bench import');
try {
  await migrate(database.db);
  const account = await database.db
    .insertInto('accounts')
    .values({ name: 'Bench', plan_code: 'enterprise' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const { file, count } = buildFile(RECORDS);
  const filePath = path.join(dir, 'import.json');
  fs.writeFileSync(filePath, JSON.stringify(file));
  const sizeMb = fs.statSync(filePath).size / 1_048_576;

  const t0 = performance.now();
  const parsed = await readImportFile(filePath);
  const t1 = performance.now();
  const result = await importData(database.db, parsed, { accountId: String(account.id), mode: 'live' });
  const t2 = performance.now();

  const nested = Object.values(result.nested).reduce((a, b) => a + b, 0);
  console.log(
    `import of ${count.toLocaleString('en')} records (+ ${nested.toLocaleString('en')} sale items and history entries), ${sizeMb.toFixed(1)} MiB of JSON, embedded database on disk`,
  );
  console.log(`  read + parse      ${((t1 - t0) / 1000).toFixed(2)} s`);
  console.log(`  validate + write  ${((t2 - t1) / 1000).toFixed(2)} s`);
  console.log(
    `  total             ${((t2 - t0) / 1000).toFixed(2)} s  (${Math.round(count / ((t2 - t0) / 1000)).toLocaleString('en')} records/s)`,
  );
} finally {
  await database.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
