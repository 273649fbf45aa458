// Data-subject requests (LGPD art. 18; issue 50 D), end to end on both engines: a customer's data is written over
// HTTP to the real server (with Idempotency-Keys and request ids that name them) and imported with the CLI
// (appointments, deals); `balcao subjects export` gives it all back in one document; `balcao subjects erase`
// anonymises them. Afterwards no served route, export, stored idempotent response or log line reveals their name,
// document, e-mail or phone; the account's sales add up to the same totals; a second erasure changes nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { balcao, balcaoJson } from './helpers/cli.ts';
import { type HttpAnswer, type Scratch, type ServeProcess, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';
import { item } from './helpers/write-fixtures.ts';

const ANA = {
  full_name: 'Ana Beatriz Quintanilha',
  email: 'ana.quintanilha@example.com',
  phone: '11987654321',
  document: '39053344705',
};
const SECRETS = Object.values(ANA);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-subject-'));
let scratch: Scratch;
let server: ServeProcess | undefined;
const logs: string[] = [];

before(async () => {
  scratch = await scratchWithKey();
});
after(async () => {
  await stop();
  await scratch?.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<ServeProcess> {
  server = await spawnServe(scratch.env);
  return server;
}
/** Stops the server (the embedded database is then free for the CLI), keeping its log lines. */
async function stop(): Promise<void> {
  if (!server) return;
  server.child.kill('SIGTERM');
  await server.exited;
  logs.push(server.logs());
  server = undefined;
}

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return send(server!.url, method, url, { key: scratch.key, body, headers });
}

const revealed = (text: string) => SECRETS.filter((s) => text.toLowerCase().includes(s.toLowerCase()));

/** Every sale of the account: count and the sum of totals, in cents. */
async function salesTotals(): Promise<{ count: number; cents: number; numbers: string[] }> {
  const res = await call('GET', '/v1/sales?limit=100&sort=created_at');
  assert.equal(res.status, 200);
  assert.equal(res.body.pagination.has_more, false);
  return {
    count: res.body.data.length,
    cents: res.body.data.reduce((sum: number, s: any) => sum + Math.round(s.total_amount * 100), 0),
    numbers: res.body.data.map((s: any) => s.transaction_number),
  };
}

describe('data-subject requests: export and erasure of one customer', () => {
  const idempotencyKey = `cliente-${ANA.email}`;
  const saleKey = randomUUID();
  let anaId: string;
  let brunoId: string;
  let saleId: string;
  let saleBody: Record<string, unknown>;
  let totalsBefore: { count: number; cents: number; numbers: string[] };

  before(async () => {
    await start();
    const created = await call(
      'POST',
      '/v1/customers',
      {
        ...ANA,
        birth_date: '1990-04-12',
        gender: 'female',
        notes: `Prefere ser chamada de Ana; e-mail ${ANA.email}`,
        address_street: 'Rua das Acácias',
        address_number: '120',
        address_city: 'Campinas',
        address_state: 'SP',
        address_zip_code: '13010-000',
      },
      { 'idempotency-key': idempotencyKey, 'x-request-id': `cadastro-${ANA.phone}` },
    );
    assert.equal(created.status, 201, created.text);
    anaId = created.body.data.id;
    const bruno = await call('POST', '/v1/customers', { full_name: 'Bruno Tavares', email: 'bruno@example.com' });
    brunoId = bruno.body.data.id;
    saleBody = {
      customer_id: anaId,
      notes: `Entregar para ${ANA.full_name}`,
      items: [item({ quantity: 3, unit_price: 19.99, notes: `presente da ${ANA.full_name}` }), item({ unit_price: 5 })],
    };
    const sale = await call('POST', '/v1/sales', saleBody, { 'idempotency-key': saleKey });
    assert.equal(sale.status, 201, sale.text);
    saleId = sale.body.data.id;
    assert.equal((await call('PATCH', `/v1/sales/${saleId}`, { status: 'completed' })).status, 200);
    assert.equal(
      (await call('POST', '/v1/sales', { customer_id: brunoId, notes: 'Bruno', items: [item({ unit_price: 42.5 })] })).status,
      201,
    );
    totalsBefore = await salesTotals();
    await stop();

    // Appointments and deals are read-only over HTTP: imported, as an operator would.
    const file = path.join(dir, 'agenda.json');
    const stageId = randomUUID();
    fs.writeFileSync(
      file,
      JSON.stringify({
        appointments: [
          {
            customer_id: anaId,
            appointment_date: '2026-12-01',
            start_time: '09:00:00',
            end_time: '10:00:00',
            status: 'scheduled',
            notes: `${ANA.full_name} pediu horário cedo`,
            customer_notes: `ligar ${ANA.phone}`,
          },
        ],
        deal_stages: [{ id: stageId, name: 'Novo', color: '#94A3B8', position: 1 }],
        deals: [
          {
            customer_id: anaId,
            stage_id: stageId,
            status: 'open',
            origin_channel: 'whatsapp',
            estimated_value: 300,
            internal_notes: ANA.email,
          },
        ],
      }),
    );
    await balcaoJson(['import', '--account', scratch.accountId, file], scratch.env);
  });

  it('export: one JSON document with the customer, their sales with items and history, appointments and deals', async () => {
    const out = path.join(dir, 'ana.json');
    const summary = await balcaoJson(
      ['subjects', 'export', '--account', scratch.accountId, '--customer', anaId, '--out', out],
      scratch.env,
    );
    assert.deepEqual(summary, { out, customer_id: anaId, sales: 1, appointments: 1, deals: 1 });
    const document = JSON.parse(fs.readFileSync(out, 'utf8'));
    assert.equal(document.customer.full_name, ANA.full_name);
    assert.equal(document.customer.document, ANA.document);
    assert.equal(document.sales[0].id, saleId);
    assert.equal(document.sales[0].items.length, 2);
    assert.deepEqual(
      document.sales[0].status_history.map((h: any) => h.new_status),
      ['pending', 'completed'],
    );
    assert.equal(document.appointments[0].customer_notes, `ligar ${ANA.phone}`);
    assert.equal(document.deals[0].internal_notes, ANA.email);
    // Without --out the document is the one JSON object on stdout.
    const printed = await balcao(['subjects', 'export', '--account', scratch.accountId, '--customer', brunoId, '--json'], scratch.env);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(JSON.parse(printed.stdout).customer.full_name, 'Bruno Tavares');
  });

  it('erase: anonymised in one run, the second run changes nothing, and it is in the audit log', async () => {
    const erased = await balcaoJson(
      [
        'subjects',
        'erase',
        '--account',
        scratch.accountId,
        '--customer',
        anaId,
        '--reason',
        `pedido de ${ANA.full_name}`,
        '--actor',
        'dpo',
      ],
      scratch.env,
    );
    assert.equal(erased.changed, true);
    assert.ok(erased.customer_fields.includes('full_name') && erased.customer_fields.includes('document'));
    assert.deepEqual(
      { ...erased.cleared, transaction_status_history: undefined },
      { transactions: 1, transaction_items: 1, transaction_status_history: undefined, appointments: 1, deals: 1 },
    );
    assert.equal(erased.redacted.idempotency_keys_removed, 1, 'the key that names her');
    assert.equal(erased.redacted.idempotency_responses, 1, "the sale's stored response");
    assert.ok(erased.redacted.request_log >= 1, 'the log entry whose request id names her');
    assert.deepEqual(revealed(JSON.stringify(erased)), []);

    const again = await balcaoJson(['subjects', 'erase', '--account', scratch.accountId, '--customer', anaId], scratch.env);
    assert.equal(again.changed, false);
    assert.deepEqual(again.customer_fields, []);

    const audit = await balcao(['audit', 'list', '--account', scratch.accountId, '--json'], scratch.env);
    const entries = JSON.parse(audit.stdout).data.filter((e: any) => e.command === 'subjects erase');
    assert.deepEqual(
      entries.map((e: any) => [e.actor, e.target_type, e.target_id, e.changes.changed]),
      [
        ['dpo', 'customer', anaId, true],
        [os.userInfo().username, 'customer', anaId, false],
      ],
    );
    assert.equal(entries[0].changes.reason, 'pedido de [anonimizado]');
    assert.deepEqual(revealed(audit.stdout), []);
  });

  it('afterwards no route, export, stored response or log line reveals her; the totals are unchanged', async () => {
    const exported = await balcao(['subjects', 'export', '--account', scratch.accountId, '--customer', anaId, '--json'], scratch.env);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(revealed(exported.stdout), []);
    const document = JSON.parse(exported.stdout);
    assert.equal(document.customer.full_name, 'Titular anonimizado');
    for (const field of ['email', 'phone', 'document', 'birth_date', 'address_street', 'notes'])
      assert.equal(document.customer[field], null);
    assert.equal(document.sales[0].notes, null);
    assert.equal(document.appointments[0].appointment_date, '2026-12-01');
    assert.equal(document.deals[0].estimated_value, 300);
    const wholeExport = path.join(dir, 'account.json');
    await balcaoJson(
      ['export', '--account', scratch.accountId, '--format', 'json', '--out', wholeExport, '--include-internal'],
      scratch.env,
    );
    assert.deepEqual(revealed(fs.readFileSync(wholeExport, 'utf8')), []);

    await start();
    for (const url of [
      `/v1/customers/${anaId}`,
      '/v1/customers?limit=100',
      `/v1/sales/${saleId}?include=items,status_history`,
      '/v1/sales?limit=100',
      '/v1/appointments?limit=100',
      '/v1/deals?limit=100',
      '/v1/events?limit=100',
      '/v1/requests?limit=100',
    ]) {
      const res = await call('GET', url);
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      assert.deepEqual(revealed(res.text), [], url);
    }
    // The stored response of the sale replays, redacted; the key that named her is gone (a retry writes anew).
    const replay = await call('POST', '/v1/sales', saleBody, { 'idempotency-key': saleKey });
    assert.equal(replay.headers['idempotent-replay'], 'true');
    assert.equal(replay.body.data.id, saleId);
    assert.deepEqual(revealed(replay.text), []);

    const totalsAfter = await salesTotals();
    assert.deepEqual(totalsAfter, totalsBefore);
    const bruno = await call('GET', `/v1/customers/${brunoId}`);
    assert.equal(bruno.body.data.full_name, 'Bruno Tavares');
    assert.equal(bruno.body.data.email, 'bruno@example.com');
    await stop();
    assert.deepEqual(revealed(logs.at(-1)!), [], 'the log lines of the server that served after the erasure');
  });
});
