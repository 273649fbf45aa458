// The streamed import (`importSources`, what `balcao import` runs): NDJSON, CSV, gzip and
// directories read back over the API; broken files refused by file, line and field with nothing
// written; --max-errors. On PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DataTransferError } from '../src/import/import-error.ts';
import { findSources } from '../src/import/sources.ts';
import { importSources } from '../src/import/stream-import.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

describe('balcao import: streamed files', () => {
  let s: TestServer;
  let dir: string;
  before(async () => {
    s = await startTestServer();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-import-stream-'));
  });
  after(async () => {
    await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Writes files under a fresh folder; returns the folder. */
  const folder = (files: Record<string, string | Buffer>) => {
    const at = fs.mkdtempSync(path.join(dir, 'case-'));
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(at, name), content);
    return at;
  };
  const run = async (target: string, accountId: string, maxErrors?: number) =>
    importSources(s.database, await findSources(target), { accountId, mode: 'live', maxErrors });
  const refusal = async (target: string, accountId: string, maxErrors?: number) => {
    const err = await run(target, accountId, maxErrors).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof DataTransferError, String(err));
    return err;
  };
  const customerCount = async (accountId: string) =>
    Number(
      (
        await s.db
          .selectFrom('customers')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('team_id', '=', accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  test('a directory of CSV files (BOM, quoting, empty cells, sale items keyed by sale id) reads back over the API', async () => {
    const { account, key } = await s.createAccountWithKey();
    const customer = randomUUID();
    const sale = randomUUID();
    const item = randomUUID();
    const at = folder({
      'customers.csv': `\uFEFFid,full_name,email,notes,is_active\r\n${customer},"Souza, Ana ""Aninha""",ana@example.com,"",true\r\n${randomUUID()},Bruno,,,false\r\n`,
      'sales.csv': `id,customer_id,transaction_number,total_amount,created_at\n${sale},${customer},42,19.9,2026-01-02T03:04:05.000Z\n`,
      'sale_items.csv': `id,sale_id,catalog_type,catalog_item_id,quantity,unit_price,subtotal,total_amount,notes\n${item},${sale},product,${randomUUID()},1,19.9,19.9,19.9,"linha 1\nlinha 2"\n`,
      'sale_status_history.csv': `sale_id,old_status,new_status\n${sale},,pending\n`,
      'README.txt': 'not an import file',
    });
    const result = await run(at, account.id);
    assert.deepEqual(result.counts, { customers: 2, sales: 1 });
    assert.deepEqual(result.nested, { 'sales.items': 1, 'sales.status_history': 1 });
    const got = (await s.request('GET', `/v1/customers/${customer}`, { key })).body.data;
    assert.equal(got.full_name, 'Souza, Ana "Aninha"');
    assert.equal(got.notes, '');
    assert.equal(got.is_active, true);
    const bruno = (await s.request('GET', '/v1/customers?filter[full_name][eq]=Bruno', { key })).body.data[0];
    assert.equal(bruno.email, null);
    assert.equal(bruno.is_active, false);
    const saleBody = (await s.request('GET', `/v1/sales/${sale}?include=items,status_history`, { key })).body.data;
    assert.equal(saleBody.total_amount, 19.9);
    assert.equal(saleBody.items[0].id, item);
    assert.equal(saleBody.items[0].notes, 'linha 1\nlinha 2');
    assert.equal(saleBody.status_history[0].new_status, 'pending');
  });

  test('NDJSON: per-resource files, one mixed file whose lines carry "resource", and gzip', async () => {
    const { account, key } = await s.createAccountWithKey();
    const sale = randomUUID();
    const mixed = [
      {
        resource: 'sale_items',
        sale_id: sale,
        catalog_type: 'service',
        catalog_item_id: randomUUID(),
        quantity: 2,
        unit_price: 5,
        subtotal: 10,
        total_amount: 10,
      },
      { resource: 'sales', id: sale, total_amount: 10, status_history: [{ new_status: 'paid' }] },
      { resource: 'customers', full_name: 'Carla' },
    ];
    const at = folder({
      'everything.ndjson': `${mixed.map((r) => JSON.stringify(r)).join('\n')}\n\n`,
      'customers.ndjson.gz': gzipSync(`${JSON.stringify({ full_name: 'Dora' })}\r\n${JSON.stringify({ full_name: 'Edu' })}`),
    });
    const result = await run(at, account.id);
    assert.deepEqual(result.counts, { customers: 3, sales: 1 });
    assert.deepEqual(result.nested, { 'sales.items': 1, 'sales.status_history': 1 });
    const saleBody = (await s.request('GET', `/v1/sales/${sale}?include=items,status_history`, { key })).body.data;
    assert.equal(saleBody.items.length, 1);
    assert.equal(saleBody.status_history[0].new_status, 'paid');
    // A single JSON object file, as DECISIONS C, gzipped.
    const json = path.join(dir, 'object.json.gz');
    fs.writeFileSync(json, gzipSync(JSON.stringify({ customers: [{ full_name: 'Fabi' }], deal_stages: [] })));
    assert.deepEqual((await run(json, account.id)).counts, { customers: 1, deal_stages: 0 });
  });

  test('broken files import nothing, and name the file, the line and the field', async () => {
    const { account } = await s.createAccountWithKey();
    const rows = Array.from({ length: 3000 }, (_, i) => `${randomUUID()},Cliente ${i},c${i}@example.com`);
    const badCsv = folder({ 'customers.csv': `id,full_name,email\n${rows.join('\n')}\n${randomUUID()},Último,sem-arroba\n` });
    let err = await refusal(badCsv, account.id);
    assert.equal(err.message, `${path.join(badCsv, 'customers.csv')}:3002: customers.email: must be an e-mail address`);

    const ndjson = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ full_name: `N${i}` }));
    const full = gzipSync(`${ndjson.join('\n')}\n`);
    const truncated = folder({ 'customers.ndjson.gz': full.subarray(0, Math.floor(full.length * 0.8)) });
    err = await refusal(truncated, account.id);
    assert.match(err.message, /customers\.ndjson\.gz: not a complete gzip file/);

    const latin1 = folder({ 'customers.csv': Buffer.from('full_name\nJos\xe9\n', 'latin1') });
    err = await refusal(latin1, account.id);
    // The line and the offset of the bad byte (`full_name\nJos` is 13 bytes).
    assert.equal(err.message, `${path.join(latin1, 'customers.csv')}:2 is not UTF-8 text (invalid byte 0xe9 at byte 13)`);

    const id = randomUUID();
    const duplicate = folder({
      'customers.ndjson': `${JSON.stringify({ id, full_name: 'A' })}\n${JSON.stringify({ id: id.toUpperCase(), full_name: 'B' })}\n`,
    });
    err = await refusal(duplicate, account.id);
    assert.equal(
      err.message,
      `${path.join(duplicate, 'customers.ndjson')}:2: customers.id: duplicate id (an earlier record of the import has it)`,
    );

    const orphan = folder({
      'sale_items.csv': `sale_id,catalog_type,catalog_item_id,quantity,unit_price,subtotal,total_amount\n${randomUUID()},product,${randomUUID()},1,1,1,1\n`,
    });
    err = await refusal(orphan, account.id);
    assert.equal(err.message, `${path.join(orphan, 'sale_items.csv')}:2: sale_items.sale_id: no sale of the account has this id`);

    const notJson = folder({ 'customers.ndjson': `${JSON.stringify({ full_name: 'A' })}\n{"full_name": \n` });
    err = await refusal(notJson, account.id);
    assert.match(err.message, /customers\.ndjson:2: not valid JSON/);
    assert.equal(await customerCount(account.id), 0);
  });

  test('an id already stored is named; --max-errors lists that many errors and stops', async () => {
    const { account } = await s.createAccountWithKey();
    const id = randomUUID();
    await run(folder({ 'customers.ndjson': JSON.stringify({ id, full_name: 'A' }) }), account.id);
    const taken = folder({ 'customers.ndjson': `${JSON.stringify({ full_name: 'B' })}\n${JSON.stringify({ id, full_name: 'C' })}\n` });
    let err = await refusal(taken, account.id);
    assert.equal(err.message, `${path.join(taken, 'customers.ndjson')}:2: customers.id: a record with this id already exists`);

    const bad = Array.from({ length: 10 }, (_, i) => JSON.stringify({ full_name: `X${i}`, email: 'nope' }));
    err = await refusal(folder({ 'customers.ndjson': bad.join('\n') }), account.id, 3);
    assert.deepEqual(
      err.issues.map((i) => i.path.replace(/^.*customers\.ndjson/, '')),
      [':1: customers.email', ':2: customers.email', ':3: customers.email'],
    );
    assert.equal(await customerCount(account.id), 1);
  });
  // On PostgreSQL the second waits for the first's lock, then its COPY meets the first's rows (a
  // refusal the driver reports after the COPY's end, which once left the import hanging).
  test('two imports of the same ids at once: one is written, the other refused by name, neither hangs', { timeout: 60_000 }, async () => {
    // Into one account: ids are unique per account (the key is (team_id, id), migrations/005_citus_ready.sql).
    const first = await s.createAccountWithKey();
    const second = first;
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: randomUUID(), full_name: `Par ${i}` }));
    const both = folder({ 'customers.ndjson': `${lines.join('\n')}\n` });
    const results = await Promise.allSettled([run(both, first.account.id), run(both, second.account.id)]);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(refused.length, 1, 'exactly one of the two imports is refused');
    assert.ok(refused[0]?.reason instanceof DataTransferError, String(refused[0]?.reason));
    assert.equal(refused[0].reason.message, `${path.join(both, 'customers.ndjson')}:1: customers.id: a record with this id already exists`);
    assert.equal(await customerCount(first.account.id), 3000);
  });

  test('a duplicate id at the end of a file is named by line, and nothing is written', async () => {
    const { account } = await s.createAccountWithKey();
    const ids = Array.from({ length: 3000 }, () => randomUUID());
    const lines = ids.map((id, i) => JSON.stringify({ id, full_name: `Fim ${i}` }));
    lines.push(JSON.stringify({ id: ids[10], full_name: 'Repetido' }));
    const late = folder({ 'customers.ndjson': lines.join('\n') });
    const err = await refusal(late, account.id);
    assert.equal(
      err.message,
      `${path.join(late, 'customers.ndjson')}:3001: customers.id: duplicate id (an earlier record of the import has it)`,
    );
    assert.equal(await customerCount(account.id), 0);
  });
  test('CSV: a line number counts the line breaks inside quoted cells; broken quoting is refused by line', async () => {
    const { account } = await s.createAccountWithKey();
    const afterBreaks = folder({
      'customers.csv': `full_name,notes,email\r\n"Ana","uma\r\nduas\r\ntrês",\r\nBruno,,sem-arroba\r\n`,
    });
    let err = await refusal(afterBreaks, account.id);
    assert.equal(err.message, `${path.join(afterBreaks, 'customers.csv')}:5: customers.email: must be an e-mail address`);

    const open = folder({ 'customers.csv': 'full_name,notes\nAna,ok\nBruno,"sem fim\n' });
    err = await refusal(open, account.id);
    assert.equal(err.message, `${path.join(open, 'customers.csv')}: not valid CSV (line 3: a quoted cell is not closed)`);

    const stray = folder({ 'customers.csv': 'full_name,notes\nAna,meio"aspas\n' });
    err = await refusal(stray, account.id);
    assert.equal(
      err.message,
      `${path.join(stray, 'customers.csv')}: not valid CSV (line 2: a quote inside a cell that does not start with one)`,
    );
    assert.equal(await customerCount(account.id), 0);
  });
});
