// The examples of the served description: no placeholder value and no deployment's address anywhere; every
// request body of every write has a named, complete example with Brazilian data (a valid CPF and CNPJ, a CEP,
// an address, a phone); every 2xx answer with a body has an example; and a live server accepts every request
// example as it stands, its references replaced by records the test creates.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_IDS } from '../src/openapi/field-examples.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { insertRow } from './helpers/read-data.ts';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every `example` and every value of `examples` in the document, with where it sits. */
function examplesIn(node: unknown, at = ''): { at: string; value: unknown }[] {
  if (!node || typeof node !== 'object') return [];
  const out: { at: string; value: unknown }[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'example') out.push({ at: `${at}/example`, value });
    else if (key === 'examples' && Array.isArray(value)) out.push(...value.map((v, i) => ({ at: `${at}/examples/${i}`, value: v })));
    else if (key === 'examples' && value && typeof value === 'object')
      for (const [name, e] of Object.entries<Json>(value)) out.push({ at: `${at}/examples/${name}`, value: e.value });
    else out.push(...examplesIn(value, `${at}/${key}`));
  }
  return out;
}

function leaves(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return [value];
}

/** A CPF whose two check digits are right. */
function isValidCpf(text: string): boolean {
  const digits = text.replace(/\D/g, '');
  if (!/^\d{11}$/.test(digits) || /^(\d)\1{10}$/.test(digits)) return false;
  const check = (length: number) => {
    const sum = [...digits.slice(0, length)].reduce((acc, d, i) => acc + Number(d) * (length + 1 - i), 0);
    return ((sum * 10) % 11) % 10;
  };
  return check(9) === Number(digits[9]) && check(10) === Number(digits[10]);
}

/** A CNPJ whose two check digits are right. */
function isValidCnpj(text: string): boolean {
  const digits = text.replace(/\D/g, '');
  if (!/^\d{14}$/.test(digits)) return false;
  const check = (length: number) => {
    const weights = length === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
    const rest = [...digits.slice(0, length)].reduce((acc, d, i) => acc + Number(d) * (weights[i] as number), 0) % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  return check(12) === Number(digits[12]) && check(13) === Number(digits[13]);
}

describe('the examples of the description', () => {
  let s: TestServer;
  let doc: Json;
  let text: string;
  const deref = (node: Json): Json => {
    let value = node;
    while (value?.$ref)
      value = (value.$ref as string)
        .split('/')
        .slice(1)
        .reduce<any>((n, p) => n?.[p.replace(/~1/g, '/')], doc);
    return value;
  };
  const operations = () =>
    Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Json })),
    );

  before(async () => {
    s = await startTestServer({ env: { BALCAO_PUBLIC_URL: 'https://api.loja-exemplo.com.br' } });
    const res = await s.request('GET', '/v1/openapi.json');
    doc = res.body;
    text = res.text;
  });
  after(() => s.close());

  test('no placeholder value, and no address of the deployment except its server', () => {
    const all = examplesIn(doc);
    assert.ok(all.length > 100, `${all.length} examples`);
    for (const { at, value } of all)
      for (const leaf of leaves(value)) assert.doesNotMatch(String(leaf), /^(s|st|str|stri|strin|string)x*$/, `placeholder at ${at}`);
    assert.deepEqual(
      doc.servers.map((x: Json) => x.url),
      ['https://api.loja-exemplo.com.br'],
    );
    const { servers: _servers, ...rest } = doc;
    assert.doesNotMatch(JSON.stringify(rest), /loja-exemplo|localhost|127\.0\.0\.1/);
    assert.doesNotMatch(doc.info.description, /https?:\/\/(?!balcao\.example\.com)/);
    assert.ok(text.length > 0);
  });

  test('every write has a named, complete request example, with Brazilian data where the fields exist', () => {
    let bodies = 0;
    for (const { path, method, op } of operations()) {
      if (!op.requestBody) continue;
      bodies++;
      const media = deref(op.requestBody).content['application/json'];
      assert.equal(media.example, undefined, `${method} ${path}: named examples only`);
      const complete = media.examples?.complete?.value;
      assert.ok(complete && typeof complete === 'object', `${method} ${path}: a complete example`);
      const schema = deref(media.schema);
      const properties = Object.keys(schema.properties ?? {});
      // The replay takes one of two fields: its example is complete with one.
      if (!schema.description?.startsWith('Exactly one of'))
        assert.deepEqual(Object.keys(complete).sort(), properties.sort(), `${method} ${path}: every field`);
    }
    assert.ok(bodies >= 12, `${bodies} request bodies`);
    const body = (name: string) => doc.components.requestBodies[name].content['application/json'].examples.complete.value;
    const customer = body('CreateCustomerInput');
    assert.ok(isValidCpf(customer.document), customer.document);
    assert.match(customer.address_zip_code, /^\d{5}-\d{3}$/);
    assert.match(customer.phone, /^\+55 \d{2} 9\d{4}-\d{4}$/);
    assert.equal(customer.address_city, 'São Paulo');
    assert.equal(customer.address_state, 'SP');
    const supplier = body('CreateSupplierInput');
    assert.ok(isValidCnpj(supplier.document_number), supplier.document_number);
    assert.match(supplier.address_zip_code, /^\d{5}-\d{3}$/);
  });

  test('every 2xx answer with a body has an example', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (!status.startsWith('2')) continue;
        for (const [type, media] of Object.entries<Json>(deref(response).content ?? {})) {
          if (!type.includes('json')) continue;
          assert.ok(media.example !== undefined || media.examples !== undefined, `${method} ${path} ${status}`);
        }
      }
    }
  });

  test('a live server accepts every request example, its references pointing at records the test creates', async () => {
    const { account, key, keyId } = await s.createAccountWithKey();
    const tenant = { accountId: account.id, mode: 'live' as const };
    const bankAccount = await insertRow(s.db, 'bank_accounts', tenant);
    const post = async (path: string, body: unknown) => {
      const res = await s.request('POST', path, { key, body });
      assert.equal(res.status, 201, `POST ${path}: ${res.text}`);
      return String(res.body.data.id);
    };
    const customer = await post('/v1/customers', { full_name: 'Cliente da venda', phone: '+55 11 91234-5678' });
    const supplier = await post('/v1/suppliers', { name: 'Fornecedor da despesa' });
    const replaced = new Map<string, string>([
      [EXAMPLE_IDS.customer, customer],
      [EXAMPLE_IDS.supplier, supplier],
      [EXAMPLE_IDS.bankAccount, String(bankAccount.id)],
      [EXAMPLE_IDS.apiKey, keyId],
    ]);
    const withRecords = (value: unknown): unknown =>
      JSON.parse(JSON.stringify(value), (_k, v) => (typeof v === 'string' && replaced.has(v) ? replaced.get(v) : v));

    // Records addressed by `{id}`: the first one each POST example creates.
    const ids = new Map<string, string>();
    let sent = 0;
    const ordered = operations().sort((a, b) => a.path.split('{').length - b.path.split('{').length);
    for (const { path, method, op } of ordered) {
      if (!op.requestBody || (method !== 'post' && method !== 'patch')) continue;
      const base = path.replace(/\/\{id\}.*$/, '');
      const id = ids.get(base);
      if (path.includes('{id}')) assert.ok(id, `no record for ${path}`);
      const concrete = path.replace('{id}', id ?? '');
      for (const [name, example] of Object.entries<Json>(deref(op.requestBody).content['application/json'].examples)) {
        const res = await s.request(method.toUpperCase(), concrete, { key, body: withRecords(example.value) });
        assert.ok(res.status >= 200 && res.status < 300, `${method.toUpperCase()} ${path} (${name}): ${res.status} ${res.text}`);
        sent++;
        if (method === 'post' && !path.includes('{') && res.body?.data?.id && !ids.has(path)) ids.set(path, res.body.data.id);
        if (path === '/v1/batch')
          assert.ok(
            res.body.data.every((r: Json) => r.status === 201),
            res.text,
          );
      }
    }
    assert.ok(sent >= 20, `${sent} examples sent`);
  });
});
