// `balcao import` through the real command: the --json shape, the human summary, --test, and
// failures as one line on stderr with nothing on stdout and nothing written.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { balcao, balcaoJson, type ScratchEnv, scratchEnv } from './helpers/cli.ts';

describe('balcao import (command)', () => {
  let scratch: ScratchEnv;
  let env: Record<string, string>;
  let dir: string;
  let accountId: string;
  const write = (name: string, content: unknown) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  before(async () => {
    scratch = await scratchEnv();
    env = scratch.env;
    dir = fs.mkdtempSync(path.join(env.BALCAO_DATA_DIR as string, '..', 'balcao-import-files-'));
    accountId = (await balcaoJson(['accounts', 'create', '--name', 'Pet & Beleza', '--modules', 'all'], env)).id;
  });
  after(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await scratch.cleanup();
  });

  const customerId = randomUUID();
  const file = () => ({
    customers: [{ id: customerId, full_name: 'Ana Souza', email: 'ana@example.com' }, { full_name: 'Bruno Lima' }],
    sales: [
      {
        transaction_number: '9',
        total_amount: 10,
        items: [{ catalog_type: 'service', catalog_item_id: randomUUID(), quantity: 1, unit_price: 10, subtotal: 10, total_amount: 10 }],
        status_history: [{ new_status: 'pending' }],
      },
    ],
    deal_stages: [],
  });

  test('an invalid file exits non-zero with one line on stderr, nothing on stdout, and writes nothing', async () => {
    const bad = file();
    bad.customers.push({ full_name: 'Carla', email: 'not-an-email' } as (typeof bad.customers)[number]);
    const badFile = write('bad.json', bad);
    const r = await balcao(['import', '--account', accountId, badFile, '--json'], env);
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `balcao: ${badFile}: customers[2].email: must be an e-mail address\n`);
    // The same ids import cleanly afterwards: the failed run left nothing behind.
    const ok = await balcaoJson(['import', '--account', accountId, write('good.json', file())], env);
    assert.deepEqual(ok, {
      account_id: accountId,
      mode: 'live',
      counts: { customers: 2, sales: 1, deal_stages: 0 },
      nested: { 'sales.items': 1, 'sales.status_history': 1 },
    });
  });

  test('--test loads the test-mode data; without --json a summary is printed', async () => {
    const r = await balcao(['import', '--account', accountId, '--test', write('test.json', { customers: [{ full_name: 'Teste' }] })], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, new RegExp(`account ${accountId} \\(test data\\)`));
    assert.match(r.stdout, /customers: 1/);
  });

  test('refuses an unknown account, a missing file and malformed JSON by name', async () => {
    const missing = randomUUID();
    const cases: [string[], RegExp][] = [
      [['import', '--account', missing, write('one.json', { customers: [] })], new RegExp(`^balcao: account ${missing} not found\\n$`)],
      [['import', '--account', accountId, path.join(dir, 'nope.json')], /^balcao: cannot read .*nope\.json: no such file\n$/],
      [['import', '--account', accountId, write('broken.json', '{"customers": [')], /^balcao: .*broken\.json is not valid JSON \(.*\)\n$/],
    ];
    for (const [args, stderr] of cases) {
      const r = await balcao([...args, '--json'], env);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, stderr);
    }
  });

  test('balcao export writes what balcao import reads back, and prints one JSON object', async () => {
    const out = path.join(dir, 'export');
    const exported = await balcaoJson(['export', '--account', accountId, '--test', '--format', 'csv', '--out', out, '--json'], env);
    assert.equal(exported.account_id, accountId);
    assert.equal(exported.mode, 'test');
    assert.equal(exported.counts.customers, 1);
    assert.ok(exported.files.includes(path.join(out, 'customers.csv')));
    assert.match(fs.readFileSync(path.join(out, 'customers.csv'), 'utf8'), /^id,.*full_name.*\n.*Teste/s);
    // Ids are global: the export goes into another database (test/export-roundtrip.test.ts), not back into this one.
    const again = await balcao(['import', '--account', accountId, '--test', out, '--json'], env);
    assert.notEqual(again.code, 0);
    assert.equal(again.stderr, `balcao: ${path.join(out, 'customers.csv')}:2: customers.id: a record with this id already exists\n`);
    const bad = await balcao(['export', '--account', accountId, '--format', 'xml', '--out', out, '--json'], env);
    assert.notEqual(bad.code, 0);
    assert.equal(bad.stdout, '');
    assert.equal(bad.stderr, 'balcao: --format must be one of ndjson, csv, json (not "xml")\n');
  });
});
