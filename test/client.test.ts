// The official TypeScript client (clients/typescript) against a live server: paging through every page, the
// retry of a POST whose answer was lost (same Idempotency-Key: one record), the wait on a 429, retries only of
// what is safe to repeat, typed errors, the long poll of the feed, and the verification of a real delivery.
// Faults on the way (a dropped answer, a 503) are injected in the fetch the client is given; the server is real.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BalcaoError, type BalcaoClient, createClient, verifyWebhook } from '../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { UNLIMITED } from './helpers/write-fixtures.ts';

const LOCAL = { BALCAO_WEBHOOK_ALLOW_PRIVATE: '1', BALCAO_WEBHOOK_TIMEOUT_SECONDS: '5' };

/** What the client sent and got, seen from its fetch. */
interface Seen {
  method: string;
  path: string;
  status: number | 'dropped' | 'injected 503';
  idempotencyKey: string | null;
}

/** A fetch that records every exchange and lets a test drop an answer or answer 503 instead of the server. */
function watchedFetch(fault?: (method: string, path: string, index: number) => 'drop-answer' | '503' | undefined) {
  const seen: Seen[] = [];
  const send: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    const headers = new Headers(init?.headers);
    const entry: Seen = { method, path: url.pathname, status: 0, idempotencyKey: headers.get('idempotency-key') };
    seen.push(entry);
    const injected = fault?.(method, url.pathname, seen.length - 1);
    if (injected === '503') {
      entry.status = 'injected 503';
      return new Response(JSON.stringify({ type: 'x/service_unavailable', title: 'Service unavailable', status: 503, request_id: 'x' }), {
        status: 503,
        headers: { 'content-type': 'application/problem+json' },
      });
    }
    const response = await fetch(input, init);
    if (injected === 'drop-answer') {
      // The server did the work; the connection broke before the answer reached the client.
      await response.body?.cancel();
      entry.status = 'dropped';
      throw new TypeError('fetch failed');
    }
    entry.status = response.status;
    return response;
  };
  return { send, seen };
}

describe('@balcao/client', () => {
  let s: TestServer;
  let key: string;
  let client: BalcaoClient;
  before(async () => {
    s = await startTestServer({ env: LOCAL });
    ({ key } = await s.createAccountWithKey({ rateLimits: UNLIMITED }));
    client = createClient({ baseUrl: s.url, apiKey: key, retryDelayMs: 10 });
  });
  after(() => s.close());

  it('lists one page, and every page through the async iterator, with filters', async () => {
    for (let i = 0; i < 23; i++)
      await client.customers.create({ full_name: `Paginada ${String(i).padStart(2, '0')}`, phone: '+55 11 98765-4321' });
    await client.customers.create({ full_name: 'Outra Pessoa', phone: '+55 21 99876-5432' });
    const page = await client.customers.list({ limit: 5, sort: 'full_name', filter: { full_name: { ilike: 'Paginada%' } } });
    assert.equal(page.data.length, 5);
    assert.equal(page.pagination.has_more, true);
    assert.equal(page.data[0]?.full_name, 'Paginada 00');
    const names: string[] = [];
    for await (const customer of client.customers.all({ limit: 10, sort: 'full_name', filter: { full_name: { ilike: 'Paginada%' } } }))
      names.push(customer.full_name);
    assert.equal(names.length, 23);
    assert.deepEqual(names, [...names].sort(), 'in order, each once');
    assert.equal(new Set(names).size, 23);
    const one = await client.customers.get(page.data[0]?.id as string);
    assert.equal(one.full_name, 'Paginada 00');
    const me = await client.me();
    assert.equal(me.key_prefix, 'live');
  });

  it('sends a POST again after its answer was lost, with the same Idempotency-Key: one record, and its answer', async () => {
    const { send, seen } = watchedFetch((method, path, i) =>
      method === 'POST' && path === '/v1/customers' && i === 0 ? 'drop-answer' : undefined,
    );
    const flaky = createClient({ baseUrl: s.url, apiKey: key, fetch: send, retryDelayMs: 10 });
    const created = await flaky.customers.create({ full_name: 'Uma Só Vez', email: 'uma.so.vez@example.com' });
    assert.deepEqual(
      seen.map((x) => x.status),
      ['dropped', 201],
    );
    assert.ok(seen[0]?.idempotencyKey, 'every POST carries a key');
    assert.equal(seen[0]?.idempotencyKey, seen[1]?.idempotencyKey, 'the retry carries the same key');
    const found = await client.customers.list({ filter: { full_name: { eq: 'Uma Só Vez' } } });
    assert.deepEqual(
      found.data.map((c) => c.id),
      [created.id],
    );
    // A caller's own key is the one sent.
    await flaky.suppliers.create({ name: 'Com Chave Própria' }, { idempotencyKey: 'chave-do-erp-0042' });
    assert.equal(seen.at(-1)?.idempotencyKey, 'chave-do-erp-0042');
  });

  it('retries a GET after a 503, but not a PATCH, which carries no key; errors are BalcaoError', async () => {
    const customer = await client.customers.create({ full_name: 'Cliente 503', phone: '+55 31 98888-7777' });
    const { send, seen } = watchedFetch((_method, _path, i) => (i === 0 ? '503' : undefined));
    const flaky = createClient({ baseUrl: s.url, apiKey: key, fetch: send, retryDelayMs: 10 });
    assert.equal((await flaky.customers.get(customer.id)).id, customer.id);
    assert.deepEqual(
      seen.map((x) => x.status),
      ['injected 503', 200],
    );

    const patching = watchedFetch((_method, _path, i) => (i === 0 ? '503' : undefined));
    const refused = createClient({ baseUrl: s.url, apiKey: key, fetch: patching.send, retryDelayMs: 10 });
    await assert.rejects(refused.customers.update(customer.id, { notes: 'não repetir' }), (err: unknown) => {
      assert.ok(err instanceof BalcaoError);
      assert.equal(err.status, 503);
      return true;
    });
    assert.equal(patching.seen.length, 1, 'a PATCH is not sent again');

    await assert.rejects(client.customers.get('0b7c1d8e-58a4-4d43-9a3c-6a9f0f4b2a11'), (err: unknown) => {
      assert.ok(err instanceof BalcaoError);
      assert.equal(err.status, 404);
      assert.equal(err.code, 'not_found');
      assert.match(err.type, /\/errors\/not_found$/);
      assert.ok(err.requestId);
      return true;
    });
    await assert.rejects(client.customers.create({ full_name: '' }), (err: unknown) => {
      assert.ok(err instanceof BalcaoError);
      assert.equal(err.status, 422);
      assert.ok(err.errors.some((e) => e.field === 'full_name'));
      return true;
    });
  });

  it('waits Retry-After on a 429 and goes on', async () => {
    const limited = await s.createAccountWithKey({ rateLimits: { ...UNLIMITED, burst_per_second: 1 } });
    const { send, seen } = watchedFetch();
    const slow = createClient({ baseUrl: s.url, apiKey: limited.key, fetch: send });
    const answers = await Promise.all([slow.me(), slow.me(), slow.me()]);
    assert.equal(answers.length, 3);
    assert.ok(
      seen.some((x) => x.status === 429),
      'the burst limit was hit',
    );
    assert.equal(seen.filter((x) => x.status === 200).length, 3);
  });

  it('follows the feed with the long poll, resumable from the cursor it gives', async () => {
    const fresh = await s.createAccountWithKey({ rateLimits: UNLIMITED });
    const follower = createClient({ baseUrl: s.url, apiKey: fresh.key });
    const seenTypes: string[] = [];
    // An empty feed: the first request is held until the write below.
    const following = follower.events.follow(
      undefined,
      (events) => {
        seenTypes.push(...events.map((e) => e.type));
        return false;
      },
      { wait: 30 },
    );
    const created = await follower.customers.create({ full_name: 'Chegou Agora', phone: '+55 41 97777-6666' });
    const cursor = await following;
    assert.deepEqual(seenTypes, ['customer.created']);
    assert.ok(cursor);
    await follower.customers.update(created.id, { notes: 'depois' });
    const next: string[] = [];
    await follower.events.follow(cursor, (events) => {
      next.push(...events.map((e) => e.type));
      return false;
    });
    assert.deepEqual(next, ['customer.updated'], 'resumed after what was seen');
  });

  it('verifies a real delivery and a test ping; a changed body is refused', async () => {
    const receiver = await startReceiver();
    // An account of its own: the replay below counts its events.
    const own = await s.createAccountWithKey({ rateLimits: UNLIMITED });
    const client = createClient({ baseUrl: s.url, apiKey: own.key });
    try {
      const endpoint = await client.webhookEndpoints.create({ url: receiver.url, enabled_events: ['supplier.*'] });
      const ping = await client.webhookEndpoints.test(endpoint.id);
      assert.equal(ping.status, 'succeeded');
      const supplier = await client.suppliers.create({ name: 'Distribuidora Silva', document_number: '11.222.333/0001-81' });
      await receiver.until((r) => r.length >= 2);
      const [pinged, delivered] = receiver.received;
      assert.ok(pinged && delivered);
      assert.equal(verifyWebhook(pinged.body, pinged.headers, endpoint.secret).type, 'ping');
      const event = verifyWebhook(Buffer.from(delivered.body), delivered.headers, endpoint.secret);
      assert.equal(event.type, 'supplier.created');
      assert.equal((event.data.object as { id?: string }).id, supplier.id);
      assert.throws(() => verifyWebhook(delivered.body.replace('Silva', 'Souza'), delivered.headers, endpoint.secret));

      // The attempt is recorded once the receiver's answer is in: after the receiver saw the request.
      const attempts = await until(
        'the attempt is listed',
        () => client.webhookEndpoints.deliveries(endpoint.id, { filter: { event_type: { eq: 'supplier.created' } } }),
        { done: (page) => page.data.length > 0 },
      );
      const retried = await client.webhookEndpoints.retryDelivery(endpoint.id, attempts.data[0]?.delivery_id as string);
      assert.equal(retried.delivery_id, attempts.data[0]?.delivery_id);
      await receiver.until((r) => r.length >= 3);
      assert.equal(receiver.received[2]?.id, delivered.id, 'the same webhook-id');
      const replayed = await client.webhookEndpoints.replay(endpoint.id, { since: '2020-01-01T00:00:00Z' });
      assert.equal(replayed.queued, 1);
    } finally {
      await receiver.close();
    }
  });

  it('upserts by external id: created, then unchanged, then updated; a conflict carries existingId', async () => {
    const { send, seen } = watchedFetch((method, path, i) =>
      method === 'PUT' && path.endsWith('/by-external-id/loja%2F77') && i === 0 ? 'drop-answer' : undefined,
    );
    const flaky = createClient({ baseUrl: s.url, apiKey: key, fetch: send, retryDelayMs: 10 });
    const body = {
      items: [{ catalog_type: 'product' as const, catalog_item_id: '7d0f3c1a-2b4e-4f6a-8c9d-0e1f2a3b4c5d', quantity: 1, unit_price: 20 }],
    };
    const created = await flaky.sales.upsert('loja/77', body);
    assert.deepEqual(
      seen.map((x) => x.status),
      ['dropped', 201],
      'the lost answer is asked for again with the same key, and replayed',
    );
    assert.equal(seen[0]?.idempotencyKey, seen[1]?.idempotencyKey);
    assert.equal(created.outcome, 'created');
    assert.equal(created.data.external_id, 'loja/77');
    assert.ok(created.etag);
    const again = await client.sales.upsert('loja/77', body);
    assert.equal(again.outcome, 'unchanged');
    assert.equal(again.etag, created.etag);
    const paid = await client.sales.upsert('loja/77', { ...body, payment_status: 'paid' }, { ifMatch: created.etag as string });
    assert.equal(paid.outcome, 'updated');
    assert.equal(paid.data.payment_status, 'paid');
    const other = await client.sales.create(body);
    const conflict = await client.sales.update(other.id, { external_id: 'loja/77' }).catch((err: unknown) => err);
    assert.ok(conflict instanceof BalcaoError);
    assert.equal(conflict.code, 'external_id_conflict');
    assert.equal(conflict.existingId, created.data.id);
  });

  it('sends a batch', async () => {
    const answer = await client.batch(
      [
        { method: 'POST', path: '/v1/customers', body: { full_name: 'Lote Um', phone: '+55 11 90000-0001' } },
        { method: 'POST', path: '/v1/customers', body: { full_name: 'Lote Dois', phone: '+55 11 90000-0002' } },
      ],
      { atomic: true },
    );
    assert.deepEqual(
      answer.data.map((r) => r.status),
      [201, 201],
    );
  });
});
