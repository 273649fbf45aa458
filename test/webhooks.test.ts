// Webhook endpoints and deliveries against a real receiving HTTP server: Standard Webhooks
// signatures (verified with the standardwebhooks package), retries with the same webhook-id,
// `failed` after the schedule, secret rotation, the endpoint limit, isolation across accounts
// and modes, two instances delivering each event once, and the SSRF refusals.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { isPublicAddress } from '../src/webhooks/address-safety.ts';
import { openTestDatabase, startTestServer, type TestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { captured } from './helpers/captured.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { writer } from './helpers/write-fixtures.ts';

// A generous timeout: on a busy machine a local receiver's answer can take a while; the timeout test sets its own.
const LOCAL = { BALCAO_WEBHOOK_ALLOW_PRIVATE: '1', BALCAO_WEBHOOK_RETRY_SCHEDULE: '0.05,0.05,0.05', BALCAO_WEBHOOK_TIMEOUT_SECONDS: '5' };

async function endpoint(s: TestServer, key: string, url: string, extra: Record<string, unknown> = {}) {
  const res = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url, enabled_events: ['*'], ...extra } });
  assert.equal(res.status, 201, res.text);
  return res.body.data as { id: string; secret: string };
}

/** The events `endpointId` has deliveries for, in order: final once everything committed so far is captured. */
async function deliveriesOf(s: TestServer, endpointId: string): Promise<{ type: string; name: string | null }[]> {
  await captured(s.database);
  return (
    s.db
      .selectFrom('webhook_deliveries as d')
      // On the account too: on Citus the two tables meet only within one account's shard.
      .innerJoin('events as e', (join) => join.onRef('e.team_id', '=', 'd.team_id').onRef('e.id', '=', 'd.event_id'))
      .select(['e.type', sql<string | null>`e.data->'object'->>'full_name'`.as('name')])
      .where('d.endpoint_id', '=', endpointId)
      .orderBy('e.id')
      .execute()
  );
}

describe('webhooks', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ env: LOCAL });
  });
  after(() => s.close());

  it('delivers each subscribed event, signed so standardwebhooks verifies it', async () => {
    const receiver = await startReceiver();
    try {
      const { key } = await writer(s);
      const created = await endpoint(s, key, receiver.url, { enabled_events: ['customer.created', 'sale.*'], description: 'ERP' });
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      // Not ASCII: the signature is over the body's UTF-8 bytes.
      const customer = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana Conceição', email: 'ana@example.com' } });
      await s.request('PATCH', `/v1/customers/${customer.body.data.id}`, { key, body: { notes: 'not subscribed' } });
      await receiver.until((r) => r.length >= 1);
      const [got] = receiver.received;
      assert.ok(got);
      const verified = new Webhook(created.secret).verify(got.body, {
        'webhook-id': got.id,
        'webhook-timestamp': got.timestamp,
        'webhook-signature': got.signature,
      }) as { id: string; type: string; data: { object: unknown } };
      assert.equal(verified.type, 'customer.created');
      assert.equal(got.id, verified.id);
      assert.deepEqual(verified.data.object, customer.body.data);
      assert.equal(got.headers['content-type'], 'application/json');
      const event = await s.request('GET', `/v1/events/${got.id}`, { key });
      assert.equal(event.body.data.type, 'customer.created');
      assert.equal(JSON.stringify(event.body.data), got.body);
      // Once the PATCH's change is captured, these are all the endpoint will ever get.
      assert.deepEqual(
        (await deliveriesOf(s, created.id)).map((d) => d.type),
        ['customer.created'],
        'customer.updated is not subscribed',
      );
      assert.deepEqual([...new Set(receiver.received.map((r) => JSON.parse(r.body).type))], ['customer.created']);

      const listed = await s.request('GET', '/v1/webhook-endpoints', { key });
      assert.equal(listed.body.data.length, 1);
      assert.equal(listed.body.data[0].secret, undefined);
      assert.equal(listed.body.data[0].description, 'ERP');
    } finally {
      await receiver.close();
    }
  });

  it('retries a failing receiver with the same webhook-id, and lists the attempts', async () => {
    const receiver = await startReceiver((_r, i) => (i < 2 ? 500 : 200));
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
      await receiver.until((r) => r.length >= 3);
      assert.equal(new Set(receiver.received.map((r) => r.id)).size, 1, 'the same webhook-id on every retry');
      const attempts = await until(
        'the three attempts are listed',
        () => s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { key }),
        {
          done: (res) => res.body.data.length === 3,
        },
      );
      const rows = attempts.body.data as any[];
      assert.deepEqual(
        rows.map((a) => [a.attempt_number, a.status, a.response_status]),
        [
          [3, 'succeeded', 200],
          [2, 'retrying', 500],
          [1, 'retrying', 500],
        ],
      );
      assert.equal(rows[2].event_id, receiver.received[0]?.id);
      assert.ok(rows[2].next_attempt_at);
      assert.equal(rows[0].next_attempt_at, null);
      assert.equal(rows[2].response_body.length, 1024, 'at most 1 kB of the answer is kept');
      // The two failures started a failing streak; the success that followed ended it.
      const streak = await s.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', ep.id).executeTakeFirstOrThrow();
      assert.equal(streak.failing_since, null);
      const page = await s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2`, { key });
      const rest = await s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2&cursor=${page.body.pagination.next_cursor}`, {
        key,
      });
      assert.deepEqual(
        [...page.body.data, ...rest.body.data].map((a: any) => a.attempt_number),
        [3, 2, 1],
      );
      // The cursor keeps microseconds: attempts within one millisecond still page one by one.
      for (const a of rows) {
        await s.db
          .updateTable('webhook_attempts')
          .set({ created_at: sql`cast(${`2026-01-01T00:00:00.000${a.attempt_number}00Z`}::text as timestamptz)` })
          .where('id', '=', a.id)
          .execute();
      }
      const seen: number[] = [];
      let cursor = '';
      for (let page = 0; page < 4; page++) {
        const res = await s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=1${cursor}`, { key });
        seen.push(...res.body.data.map((a: any) => a.attempt_number));
        if (!res.body.pagination.has_more) break;
        cursor = `&cursor=${res.body.pagination.next_cursor}`;
      }
      assert.deepEqual(seen, [3, 2, 1]);
    } finally {
      await receiver.close();
    }
  });

  it('disables an endpoint that has failed everything for 5 days, and says why', async () => {
    const receiver = await startReceiver(() => 503);
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      // Five days of failures, compressed: the streak started six days ago.
      await s.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(Date.now() - 6 * 86_400_000).toISOString() })
        .where('id', '=', ep.id)
        .execute();
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
      const got = await until('the endpoint is disabled', () => s.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key }), {
        done: (res) => res.body.data.enabled === false,
      });
      assert.equal(got.body.data.enabled, false);
      assert.match(got.body.data.disabled_reason, /5 days/);
      const enabled = await s.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { key, body: { enabled: true } });
      assert.equal(enabled.body.data.enabled, true);
      assert.equal(enabled.body.data.disabled_reason, null);
    } finally {
      await receiver.close();
    }
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const receiver = await startReceiver();
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      const rotated = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key });
      assert.equal(rotated.status, 200, rotated.text);
      assert.notEqual(rotated.body.data.secret, ep.secret);
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
      await receiver.until((r) => r.length >= 1);
      const got = receiver.received[0];
      assert.ok(got);
      const headers = { 'webhook-id': got.id, 'webhook-timestamp': got.timestamp, 'webhook-signature': got.signature };
      for (const secret of [ep.secret, rotated.body.data.secret]) assert.ok(new Webhook(secret).verify(got.body, headers));
    } finally {
      await receiver.close();
    }
  });

  it('manages endpoints: get, patch, delete, the 16-endpoint limit and the scopes', async () => {
    const { key, accountId } = await writer(s);
    const ep = await endpoint(s, key, 'https://hooks.example.com/a');
    const patched = await s.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, {
      key,
      body: { enabled: false, enabled_events: ['sale.created'] },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.enabled, false);
    assert.deepEqual(patched.body.data.enabled_events, ['sale.created']);
    const bad = await s.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { key, body: { enabled_events: ['sale.exploded'] } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.errors[0].field, 'enabled_events[0]');
    for (let i = 1; i < 16; i++) await endpoint(s, key, `https://hooks.example.com/${i}`);
    const over = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://hooks.example.com/17' } });
    assert.equal(over.status, 422);
    const testKey = await s.createKey(accountId, { test: true });
    await endpoint(s, testKey.key, 'https://hooks.example.com/test-mode');
    assert.equal((await s.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key: testKey.key })).status, 404);
    assert.equal((await s.request('DELETE', `/v1/webhook-endpoints/${ep.id}`, { key })).status, 204);
    assert.equal((await s.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key })).status, 404);

    const reader = await s.createKey(accountId, { scopes: ['*:read'] });
    assert.equal((await s.request('GET', '/v1/webhook-endpoints', { key: reader.key })).status, 200);
    const refused = await s.request('POST', '/v1/webhook-endpoints', { key: reader.key, body: { url: 'https://hooks.example.com/x' } });
    assert.equal(refused.status, 403);
    const none = await s.createKey(accountId, { scopes: ['customers:write'] });
    assert.equal((await s.request('GET', '/v1/webhook-endpoints', { key: none.key })).status, 403);
  });

  it('delivers only the events of its own account and mode', async () => {
    const receiver = await startReceiver();
    try {
      const a = await writer(s);
      const ep = await endpoint(s, a.key, receiver.url);
      const aTest = await s.createKey(a.accountId, { test: true });
      const b = await writer(s);
      await s.request('POST', '/v1/customers', { key: aTest.key, body: { full_name: 'Sandbox', email: 's@example.com' } });
      await s.request('POST', '/v1/customers', { key: b.key, body: { full_name: 'Other', email: 'o@example.com' } });
      await s.request('POST', '/v1/customers', { key: a.key, body: { full_name: 'Mine', email: 'm@example.com' } });
      // Once the three writes are captured, this is all the endpoint will ever get.
      assert.deepEqual(
        (await deliveriesOf(s, ep.id)).map((d) => d.name),
        ['Mine'],
      );
      await receiver.until((r) => r.length >= 1);
      assert.deepEqual(
        receiver.received.map((r) => JSON.parse(r.body).data.object.full_name),
        ['Mine'],
      );
    } finally {
      await receiver.close();
    }
  });
});

describe('webhooks to a receiver that never answers', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ env: { ...LOCAL, BALCAO_WEBHOOK_TIMEOUT_SECONDS: '0.5' } });
  });
  after(() => s.close());

  it('retries a receiver that times out, then marks the delivery failed after the last attempt', async () => {
    const receiver = await startReceiver(() => 'hang');
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      await s.request('POST', '/v1/expenses', {
        key,
        body: { expense_type: 'fixed', description: 'Aluguel', original_amount: 10, final_amount: 10 },
      });
      const attempts = await until('the delivery fails', () => s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { key }), {
        done: (res) => res.body.data.some((a: any) => a.status === 'failed'),
      });
      const rows = attempts.body.data as any[];
      assert.deepEqual(
        rows.map((a) => [a.attempt_number, a.status, a.error]),
        [
          [4, 'failed', 'timeout'],
          [3, 'retrying', 'timeout'],
          [2, 'retrying', 'timeout'],
          [1, 'retrying', 'timeout'],
        ],
      );
      assert.equal(new Set(receiver.received.map((r) => r.id)).size, 1);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhooks across two instances', () => {
  it('delivers each event once when two instances share the database', async () => {
    const database = await openTestDatabase();
    const one = await startTestServer({ env: LOCAL, database });
    const two = await startTestServer({ env: LOCAL, database });
    const receiver = await startReceiver();
    try {
      const { key } = await writer(one);
      await endpoint(one, key, receiver.url);
      const writes = 12;
      await Promise.all(
        Array.from({ length: writes }, (_, i) =>
          (i % 2 ? one : two).request('POST', '/v1/customers', { key, body: { full_name: `C${i}`, email: `c${i}@example.com` } }),
        ),
      );
      await receiver.until((r) => new Set(r.map((x) => x.id)).size >= writes);
      // Stopped, each instance finishes the attempts it has in flight: after that nothing more can arrive.
      await one.close();
      await two.close();
      // Each attempt was claimed by one instance: every request received is one recorded attempt,
      // and no (delivery, attempt number) was sent twice.
      const attempts = await database.db.selectFrom('webhook_attempts').select(['delivery_id', 'attempt_number']).execute();
      assert.equal(new Set(attempts.map((a) => `${a.delivery_id}:${a.attempt_number}`)).size, attempts.length);
      assert.equal(receiver.received.length, attempts.length, 'no event went out twice');
      assert.equal(new Set(attempts.map((a) => a.delivery_id)).size, writes);
    } finally {
      await receiver.close();
      await one.close();
      await two.close();
      await database.close();
      await database.drop();
    }
  });
});

describe('deleting an endpoint while its deliveries are attempted', () => {
  it('answers 204 every time and leaves none of its deliveries or attempts behind', async () => {
    // Attempts fail at once (no such host) and are retried every 50 ms, so the worker is recording one as the
    // endpoint goes. A deletion that locked the endpoint before its deliveries deadlocked with the worker
    // (which locks a delivery, then the endpoint) about once in 25, and answered 500.
    const s = await startTestServer({ env: { ...LOCAL, BALCAO_WEBHOOK_RETRY_SCHEDULE: Array(8).fill('0.05').join(',') } });
    try {
      const { key, accountId } = await writer(s);
      const deleted: string[] = [];
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        const created = await endpoint(s, key, 'https://hooks.example.com/a');
        for (const name of ['F1', 'F2', 'F3'])
          assert.equal((await s.request('POST', '/v1/suppliers', { key, body: { name } })).status, 201);
        await new Promise((resolve) => setTimeout(resolve, 100));
        statuses.push((await s.request('DELETE', `/v1/webhook-endpoints/${created.id}`, { key })).status);
        deleted.push(created.id);
      }
      assert.deepEqual(statuses, Array(15).fill(204));
      for (const table of ['webhook_deliveries', 'webhook_attempts'] as const) {
        const left = await s.db
          .selectFrom(table)
          .select('endpoint_id')
          .where('team_id', '=', accountId)
          .where('endpoint_id', 'in', deleted)
          .execute();
        assert.deepEqual(left, [], table);
      }
    } finally {
      await s.close();
    }
  });
});

describe('webhooks on a graceful stop', () => {
  it('releases an attempt still in flight, uncounted, for the next start', async () => {
    const receiver = await startReceiver(() => 'hang');
    const database = await openTestDatabase();
    const s = await startTestServer({ env: { ...LOCAL, BALCAO_WEBHOOK_TIMEOUT_SECONDS: '30' }, database });
    try {
      const { key } = await writer(s);
      await endpoint(s, key, receiver.url);
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
      await receiver.until((r) => r.length === 1);
      await s.close();
      const rows = await database.db.selectFrom('webhook_deliveries').select(['status', 'attempt_count', 'lease_owner']).execute();
      assert.deepEqual(rows, [{ status: 'pending', attempt_count: 0, lease_owner: null }]);
      assert.equal((await database.db.selectFrom('webhook_attempts').select('id').execute()).length, 0);
    } finally {
      await receiver.close();
      await database.close();
      await database.drop();
    }
  });
});

describe('webhooks to endpoints that do not answer', () => {
  it('posts to the other endpoints meanwhile', async () => {
    const slow = await startReceiver(() => 'hang');
    const quick = await startReceiver();
    // The slow endpoint's attempt stays open for the whole test: the worker must not wait for it.
    const s = await startTestServer({ env: { ...LOCAL, BALCAO_WEBHOOK_TIMEOUT_SECONDS: '120' } });
    try {
      const first = await writer(s);
      const second = await writer(s);
      await endpoint(s, first.key, slow.url);
      await endpoint(s, second.key, quick.url);
      await s.request('POST', '/v1/suppliers', { key: first.key, body: { name: 'Held' } });
      await slow.until((r) => r.length === 1);
      await s.request('POST', '/v1/suppliers', { key: second.key, body: { name: 'Delivered' } });
      await quick.until((r) => r.length === 1);
      assert.equal(JSON.parse(quick.received[0]?.body ?? '{}').data.object.name, 'Delivered');
      assert.equal(slow.hangingOpen(), 1, 'the slow endpoint\u2019s attempt is still waiting for its answer');
    } finally {
      await slow.close();
      await quick.close();
      await s.close();
    }
  });

  it('posts at most 20 attempts at once to one endpoint', async () => {
    const receiver = await startReceiver(() => 'hang');
    const s = await startTestServer({ env: { ...LOCAL, BALCAO_WEBHOOK_TIMEOUT_SECONDS: '120' } });
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      // One transaction of 25 creations: its 25 deliveries are made together; a claim takes 20 at most, and the next
      // one must leave the full endpoint's other 5 due.
      const operations = Array.from({ length: 25 }, (_, i) => ({ method: 'POST', path: '/v1/suppliers', body: { name: `F${i}` } }));
      const batch = await s.request('POST', '/v1/batch', { key, body: { atomic: true, operations } });
      assert.equal(batch.status, 200, batch.text);
      await receiver.until((r) => r.length === 20);
      await captured(s.database);
      const deliveries = await s.db
        .selectFrom('webhook_deliveries')
        .select(['lease_owner', 'attempt_count'])
        .where('endpoint_id', '=', ep.id)
        .execute();
      assert.equal(deliveries.length, 25);
      assert.equal(deliveries.filter((d) => d.lease_owner !== null).length, 20, 'twenty leased and posted, five left due');
      assert.equal(receiver.hangingOpen(), 20);
    } finally {
      await receiver.close();
      await s.close();
    }
  });
});

describe('webhook address safety', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ env: { BALCAO_WEBHOOK_RETRY_SCHEDULE: '0.05' } });
  });
  after(() => s.close());

  it('classifies addresses: only public unicast IPv4 and IPv6 pass', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) assert.equal(isPublicAddress(ip), true, ip);
    const refused = [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.100.100.200',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      'not-an-ip',
    ];
    for (const ip of refused) assert.equal(isPublicAddress(ip), false, ip);
  });

  it('refuses non-https and private URLs at creation with errors[].field = url', async () => {
    const { key } = await writer(s);
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/x',
      'https://[::1]/x',
      'https://[fd00::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://localhost/x',
      'https://metadata.google.internal/x',
      'not a url',
    ]) {
      const res = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url } });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.equal(res.body.errors[0].field, 'url', url);
    }
    const patch = await s.request('PATCH', `/v1/webhook-endpoints/${(await endpoint(s, key, 'https://hooks.example.com/ok')).id}`, {
      key,
      body: { url: 'https://192.168.0.1/x' },
    });
    assert.equal(patch.status, 422);
    assert.equal(patch.body.errors[0].field, 'url');
  });

  it('refuses at delivery time to connect to a private address', async () => {
    const receiver = await startReceiver();
    try {
      const { key, tenant } = await writer(s);
      // Stored as if DNS had said "public" at creation: the connection itself is checked.
      const port = new URL(receiver.url).port;
      const [row] = await s.db
        .insertInto('webhook_endpoints')
        .values({ ...tenant, url: `https://127.0.0.1:${port}/hook`, enabled_events: ['*'], secret: `whsec_${'A'.repeat(32)}` })
        .returning('id')
        .execute();
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'F' } });
      const attempts = await until('the delivery fails', () => s.request('GET', `/v1/webhook-endpoints/${row?.id}/deliveries`, { key }), {
        done: (res) => res.body.data.some((a: any) => a.status === 'failed'),
      });
      assert.deepEqual(
        attempts.body.data.map((a: any) => a.error),
        ['address_not_allowed', 'address_not_allowed'],
      );
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });
});
