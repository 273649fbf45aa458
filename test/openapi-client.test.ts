// The typed client example of README.md, run against a real server: types generated
// from the served document (test/generated/balcao-api.ts, kept fresh by `npm run openapi:check`)
// and openapi-fetch. The code between the region markers is the README's, character for character.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import createClient, { type Client } from 'openapi-fetch';
import { Contract } from './helpers/contract.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { insertRows } from './helpers/read-data.ts';
import type { components, paths } from './generated/balcao-api.ts';

// #region client-example
type Balcao = Client<paths>;
type CreateSaleInput = components['requestBodies']['CreateSaleInput']['content']['application/json'];

/** A fetch that, on a 429, waits the seconds of `Retry-After` and sends the same request again. */
function fetchRetrying429(maxAttempts = 5, send: typeof fetch = fetch) {
  return async (request: Request): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const response = await send(request.clone());
      if (response.status !== 429 || attempt >= maxAttempts) return response;
      const seconds = Number(response.headers.get('Retry-After') ?? '1');
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  };
}

function balcaoClient(baseUrl: string, apiKey: string, send: typeof fetch = fetch): Balcao {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` }, fetch: fetchRetrying429(5, send) });
}

/** Every customer, one page after another, until `has_more` is false. */
async function* allCustomers(client: Balcao, pageSize = 100) {
  let cursor: string | undefined;
  do {
    const { data, error } = await client.GET('/v1/customers', { params: { query: { limit: pageSize, cursor } } });
    if (error) throw new Error(`${error.status} ${error.type}: ${error.detail ?? error.title}`);
    yield* data.data;
    cursor = data.pagination.has_more ? (data.pagination.next_cursor ?? undefined) : undefined;
  } while (cursor);
}

/** Creates a sale. The Idempotency-Key makes any retry (after a 429, a timeout…) safe: never two sales. */
async function createSale(client: Balcao, input: CreateSaleInput, idempotencyKey: string = crypto.randomUUID()) {
  const { data, error, response } = await client.POST('/v1/sales', {
    params: { header: { 'Idempotency-Key': idempotencyKey } },
    body: input,
  });
  if (error) throw new Error(`${error.status} ${error.type}: ${error.detail ?? error.title}`);
  return { sale: data.data, replayed: response.headers.get('Idempotent-Replay') === 'true' };
}
// #endregion client-example

describe('the typed client example (openapi-fetch + generated types)', () => {
  let s: TestServer;
  const seen: { method: string; path: string; status: number; retryAfter: string | null }[] = [];

  /** The client's transport: records every exchange and holds it to the served document. */
  const observed: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const text = await response.clone().text();
    const url = new URL(request.url);
    Contract.for(s.app.openapiJson()).check(request.method, url.pathname, { status: response.status, headers: response.headers, text });
    seen.push({ method: request.method, path: url.pathname, status: response.status, retryAfter: response.headers.get('retry-after') });
    return response;
  };

  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('is the code of README.md', () => {
    const source = readFileSync(new URL(import.meta.url), 'utf8');
    const region = /\/\/ #region client-example\n([\s\S]*?)\/\/ #endregion client-example/.exec(source)?.[1];
    const doc = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    // The recipe for generating a client yourself (the official client's example comes before it).
    const block = /### Generating a client yourself[\s\S]*?```ts\n([\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(region && block);
    const body = block.replace(/^(import .*\n|\/\/ .*\n)+\n?/, '');
    assert.equal(body, region);
  });

  test('pages through every customer with cursors', async () => {
    const { account, key } = await s.createAccountWithKey();
    const rows = Array.from({ length: 45 }, (_, i) => ({ full_name: `Cliente ${String(i).padStart(2, '0')}` }));
    const inserted = await insertRows(s.db, 'customers', { accountId: account.id, mode: 'live' }, rows);
    seen.length = 0;
    const ids: string[] = [];
    for await (const customer of allCustomers(balcaoClient(s.url, key, observed), 20)) ids.push(customer.id);
    assert.equal(ids.length, 45);
    assert.deepEqual(new Set(ids), new Set(inserted.map((r) => r.id)));
    assert.equal(seen.filter((x) => x.path === '/v1/customers' && x.status === 200).length, 3);
  });

  test('creates a sale with an Idempotency-Key; the same key replays it instead of creating another', async () => {
    const { account, key } = await s.createAccountWithKey();
    const [customer] = await insertRows(s.db, 'customers', { accountId: account.id, mode: 'live' }, [{ full_name: 'Ana' }]);
    const client = balcaoClient(s.url, key, observed);
    const input: CreateSaleInput = {
      customer_id: customer?.id as string,
      items: [{ catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 3, unit_price: 19.99 }],
    };
    const idempotencyKey = randomUUID();
    const first = await createSale(client, input, idempotencyKey);
    assert.equal(first.replayed, false);
    assert.equal(first.sale.total_amount, 59.97);
    assert.equal(first.sale.items.length, 1);
    const again = await createSale(client, input, idempotencyKey);
    assert.equal(again.replayed, true);
    assert.equal(again.sale.id, first.sale.id);
    const { data } = await client.GET('/v1/sales', { params: { query: { 'filter[customer_id][eq]': customer?.id as string } } });
    assert.equal(data?.data.length, 1);
  });

  test('waits out a 429 by Retry-After and retries the same request', async () => {
    const { account, key } = await s.createAccountWithKey({ rateLimits: { burst_per_second: 1 } });
    const [customer] = await insertRows(s.db, 'customers', { accountId: account.id, mode: 'live' }, [{ full_name: 'Bia' }]);
    const client = balcaoClient(s.url, key, observed);
    const item = { catalog_type: 'product' as const, catalog_item_id: randomUUID(), quantity: 1, unit_price: 10 };
    seen.length = 0;
    // One request per second passes: of three at once, at least one is refused with 429 first.
    const sales = await Promise.all([1, 2, 3].map(() => createSale(client, { customer_id: customer?.id as string, items: [item] })));
    assert.equal(new Set(sales.map((x) => x.sale.id)).size, 3);
    const refused = seen.filter((x) => x.status === 429);
    assert.ok(refused.length >= 1);
    for (const r of refused) assert.equal(r.retryAfter, '1');
    assert.equal(seen.filter((x) => x.status === 201).length, 3);
  });
});
