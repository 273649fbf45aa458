// Every input is bounded (issue 26): each text field of each write body accepts a random,
// incompressible value of its bound and refuses one character more with a 422 naming the field;
// the values that used to reach a btree index whole (3 000 to 200 000 characters) are refused, not
// a 500; `balcao import` applies the same bounds; a stored row longer than a bound stays readable
// and a PATCH of its other fields works; an import's encoding error names its line and byte.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TObject, TSchema } from '@sinclair/typebox';
import { sql } from 'kysely';
import { ImportError } from '../src/import/import-error.ts';
import { findSources, firstInvalidByte } from '../src/import/sources.ts';
import { importSources } from '../src/import/stream-import.ts';
import { CreateCustomerInput } from '../src/resources/writes/customers.ts';
import { CreateExpenseInput } from '../src/resources/writes/expenses.ts';
import { CreateSaleInput } from '../src/resources/writes/sales.ts';
import { CreateSupplierInput } from '../src/resources/writes/suppliers.ts';
import { LENGTH, TEXT_BOUNDS } from '../src/schemas/bounds.ts';
import { createWebhookEndpointBody } from '../src/webhooks/endpoint-schema.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { assertFieldError, item, writer } from './helpers/write-fixtures.ts';

/** Code points from ASCII, Latin-1, CJK (3 UTF-8 bytes) and emoji (4 bytes): random text PostgreSQL cannot compress. */
const RANGES: [number, number][] = [
  [0x21, 0x7e],
  [0xc0, 0xff],
  [0x4e00, 0x9fff],
  [0x1f600, 0x1f64f],
];
function randomText(length: number, ranges: [number, number][] = RANGES): string {
  const out: string[] = [];
  for (let i = 0; i < length; i++) {
    const [low, high] = ranges[randomInt(ranges.length)] as [number, number];
    out.push(String.fromCodePoint(low + randomInt(high - low + 1)));
  }
  return out.join('');
}
const alnum = (length: number) =>
  randomText(length, [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ]);

type Leaf = { path: (string | number)[]; maxLength: number };

/** The free-text leaves of a body schema (strings with no format and no enum), with their paths. */
function textLeaves(schema: TSchema, at: (string | number)[] = []): Leaf[] {
  const branches: TSchema[] = schema.anyOf ?? [schema];
  const out: Leaf[] = [];
  for (const s of branches) {
    if (s.type === 'string' && s.format === undefined && s.enum === undefined) out.push({ path: at, maxLength: s.maxLength });
    if (s.type === 'object')
      for (const [name, child] of Object.entries(s.properties as Record<string, TSchema>)) out.push(...textLeaves(child, [...at, name]));
    if (s.type === 'array') out.push(...textLeaves(s.items, [...at, 0]));
  }
  return out;
}

function withValue(base: Record<string, unknown>, at: (string | number)[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(base);
  let node: any = copy;
  for (const [i, key] of at.entries()) {
    if (i === at.length - 1) node[key] = value;
    else node = node[key] ??= typeof at[i + 1] === 'number' ? [] : {};
  }
  return copy;
}
const fieldName = (at: (string | number)[]) => at.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');

const BODIES: { path: string; schema: TObject; base: Record<string, unknown>; accepts: boolean }[] = [
  { path: '/v1/customers', schema: CreateCustomerInput, base: { full_name: 'Ana', email: 'ana@example.com' }, accepts: true },
  {
    path: '/v1/suppliers',
    schema: CreateSupplierInput,
    base: { name: 'Fornecedor', pix_keys: [{ type: 'cpf', key: '123.456.789-09' }] },
    accepts: true,
  },
  {
    path: '/v1/expenses',
    schema: CreateExpenseInput,
    base: { expense_type: 'fixed', description: 'Aluguel', original_amount: 100, final_amount: 100, tags: ['casa'] },
    accepts: true,
  },
  { path: '/v1/sales', schema: CreateSaleInput, base: { items: [item()] }, accepts: true },
  // An accepted endpoint's URL must resolve to a public address: only the refusals are checked here.
  { path: '/v1/webhook-endpoints', schema: createWebhookEndpointBody, base: { url: 'https://example.com/hook' }, accepts: false },
];

describe('bounded inputs', () => {
  let s: TestServer;
  let key: string;
  let accountId: string;
  let dir: string;
  before(async () => {
    s = await startTestServer();
    ({ key, accountId } = await writer(s));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bounds-'));
  });
  after(async () => {
    await s?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('every text field of every write body: its bound is accepted, one more character is a 422 naming it', async () => {
    let checked = 0;
    for (const body of BODIES) {
      const leaves = textLeaves(body.schema);
      assert.ok(leaves.length > 0, body.path);
      for (const leaf of leaves) {
        const field = fieldName(leaf.path);
        assert.equal(typeof leaf.maxLength, 'number', `${body.path} ${field} has a maxLength`);
        if (body.accepts) {
          const res = await s.request('POST', body.path, { key, body: withValue(body.base, leaf.path, randomText(leaf.maxLength)) });
          assert.equal(res.status, 201, `${body.path} ${field} at ${leaf.maxLength}: ${res.text.slice(0, 300)}`);
        }
        const over = await s.request('POST', body.path, { key, body: withValue(body.base, leaf.path, randomText(leaf.maxLength + 1)) });
        assertFieldError(over, field, 'too_long');
        const message = (over.body.errors as { field: string; message: string }[]).find((e) => e.field === field)?.message ?? '';
        assert.match(message, new RegExp(`${leaf.maxLength}`), `${field}: the message says the bound (${message})`);
        checked++;
      }
    }
    assert.ok(checked >= 45, `text fields checked: ${checked}`);
  });

  test('the values that gave a 500 (indexed columns, 3 000 to 200 000 random characters) are a 422', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['/v1/customers', { full_name: 'Ana', email: 'ana@example.com' }, 'document'],
      ['/v1/suppliers', {}, 'name'],
      ['/v1/suppliers', { name: 'F' }, 'document_number'],
      ['/v1/expenses', { expense_type: 'fixed', description: 'Aluguel', original_amount: 1, final_amount: 1 }, 'status'],
    ];
    for (const length of [3000, 10_000, 200_000]) {
      for (const [route, base, field] of cases) {
        const res = await s.request('POST', route, { key, body: { ...base, [field]: alnum(length) } });
        assertFieldError(res, field, 'too_long');
      }
    }
  });

  test('a body nested 5 000 or 100 000 levels deep is a 422, with or without an Idempotency-Key (it was a 500)', async () => {
    for (const depth of [5000, 100_000]) {
      for (const idempotent of [false, true]) {
        const res = await fetch(`${s.url}/v1/customers`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            ...(idempotent ? { 'idempotency-key': `deep-${depth}` } : {}),
          },
          body: `{"full_name":${'['.repeat(depth)}"a\u0000"${']'.repeat(depth)}}`,
        });
        assert.equal(res.status, 422, `depth ${depth}: ${(await res.text()).slice(0, 200)}`);
      }
    }
  });

  test('numbers past their bounds and too many list items are 422s naming the field', async () => {
    const sale = await s.request('POST', '/v1/sales', { key, body: { items: [item({ quantity: 1e12 })] } });
    assertFieldError(sale, 'items[0].quantity', 'too_big');
    const expense = await s.request('POST', '/v1/expenses', {
      key,
      body: { expense_type: 'f', description: 'd', original_amount: 1, final_amount: 1, installments: 2 ** 31, tags: Array(101).fill('t') },
    });
    assertFieldError(expense, 'installments', 'too_big');
    assertFieldError(expense, 'tags', 'too_long');
  });

  test('a stored value longer than today’s bound stays readable, and a PATCH that does not resend it works', async () => {
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Antiga', email: 'antiga@example.com' } });
    assert.equal(created.status, 201);
    const id = created.body.data.id as string;
    const long = 'Observação antiga. '.repeat(600); // 11 400 characters, stored before the bounds
    await sql`UPDATE customers SET notes = ${long} WHERE id = ${id}`.execute(s.db);
    const read = await s.request('GET', `/v1/customers/${id}`, { key });
    assert.equal(read.status, 200);
    assert.equal(read.body.data.notes, long);
    const patched = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { phone: '+55 11 91234-5678' } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.notes, long);
    const resent = await s.request('PATCH', `/v1/customers/${id}`, { key, body: { notes: long } });
    assertFieldError(resent, 'notes', 'too_long');
  });

  test('balcao import refuses a value over its bound, by file, line and field, and imports nothing', async () => {
    const at = fs.mkdtempSync(path.join(dir, 'long-'));
    const rows = Array.from({ length: 40 }, (_, i) => `Cliente ${i},${i}`);
    rows.push(`Cliente longo,${alnum(3000)}`);
    fs.writeFileSync(path.join(at, 'customers.csv'), `full_name,document\n${rows.join('\n')}\n`);
    const err = await importSources(s.database, await findSources(at), { accountId, mode: 'live' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ImportError, String(err));
    assert.equal(
      err.message,
      `${path.join(at, 'customers.csv')}:42: customers.document: must be at most ${TEXT_BOUNDS.customers.document} characters`,
    );
    // The indexed columns of tables the API does not write are bounded too.
    const products = fs.mkdtempSync(path.join(dir, 'products-'));
    fs.writeFileSync(path.join(products, 'products.ndjson'), `${JSON.stringify({ name: alnum(10_000), unit: 'un' })}\n`);
    const err2 = await importSources(s.database, await findSources(products), { accountId, mode: 'live' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err2 instanceof ImportError, String(err2));
    assert.match(err2.message, new RegExp(`products\\.ndjson:1: \\w+\\.name: must be at most ${LENGTH.name} characters`));
  });

  test('an import with bytes that are not UTF-8 names the line and the true byte offset', async () => {
    const latin1At = async (lines: string[], badLine: number) => {
      const at = fs.mkdtempSync(path.join(dir, 'latin1-'));
      const before = Buffer.from(`${lines.slice(0, badLine - 1).join('\n')}\n`, 'utf8');
      const bad = Buffer.from(`${lines[badLine - 1]}\n`, 'latin1');
      const rest = Buffer.from(`${lines.slice(badLine).join('\n')}\n`, 'utf8');
      fs.writeFileSync(path.join(at, 'customers.csv'), Buffer.concat([before, bad, rest]));
      const err = await importSources(s.database, await findSources(at), { accountId, mode: 'live' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ImportError, String(err));
      const offset = before.length + bad.indexOf(0xe9);
      return { message: err.message, file: path.join(at, 'customers.csv'), offset };
    };
    const header = 'full_name,notes';
    const small = [header, ...Array.from({ length: 99 }, (_, i) => (i === 59 ? 'José,café' : `Cliente ${i},ok`))];
    const one = await latin1At(small, 61);
    assert.equal(one.message, `${one.file}:61 is not UTF-8 text (invalid byte 0xe9 at byte ${one.offset.toLocaleString('en')})`);
    // Deep in a large file: many 256 KiB reads in, with multi-byte characters across read boundaries.
    const large = [header, ...Array.from({ length: 60_000 }, (_, i) => (i === 49_999 ? 'José,café' : `Cliente ção ${i},日本語 ${i}`))];
    const deep = await latin1At(large, 50_001);
    assert.ok(deep.offset > 1_000_000, `deep: ${deep.offset}`);
    assert.equal(deep.message, `${deep.file}:50001 is not UTF-8 text (invalid byte 0xe9 at byte ${deep.offset.toLocaleString('en')})`);
  });

  test('firstInvalidByte finds the start of the first malformed character', () => {
    assert.equal(firstInvalidByte(Buffer.from('ação', 'utf8')), 6);
    assert.equal(firstInvalidByte(Buffer.from([0x61, 0xe9, 0x0a])), 1);
    assert.equal(firstInvalidByte(Buffer.from([0x61, 0xc0, 0x80])), 1); // overlong
    assert.equal(firstInvalidByte(Buffer.from([0xed, 0xa0, 0x80])), 0); // a surrogate
    assert.equal(firstInvalidByte(Buffer.from([0xf0, 0x9f, 0x98])), 3); // cut off at the end
  });
});
