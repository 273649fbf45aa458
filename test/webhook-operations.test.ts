// The operations on a webhook endpoint, over HTTP against a real receiver: the signed test ping (its
// answer is the attempt, it is no event of the feed, the address check applies at send time), the retry
// of one delivery (same webhook-id, one more attempt, whatever its status), the replay of the feed from a
// cursor or a time (subscribed events only, feed order, at most 10 000 per call), and the deliveries
// list's filters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { assertFieldError, writer } from './helpers/write-fixtures.ts';

const LOCAL = { BALCAO_WEBHOOK_ALLOW_PRIVATE: '1', BALCAO_WEBHOOK_RETRY_SCHEDULE: '0.05,0.05,0.05', BALCAO_WEBHOOK_TIMEOUT_SECONDS: '5' };

type Json = Record<string, any>;

async function endpoint(s: TestServer, key: string, url: string, extra: Json = {}) {
  const res = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url, ...extra } });
  assert.equal(res.status, 201, res.text);
  return res.body.data as { id: string; secret: string };
}

const attemptsOf = (s: TestServer, key: string, id: string, query = '') =>
  s.request('GET', `/v1/webhook-endpoints/${id}/deliveries${query}`, { key }).then((res) => {
    assert.equal(res.status, 200, res.text);
    return res.body.data as Json[];
  });

const verify = (secret: string, r: { id: string; timestamp: string; signature: string; body: string }) =>
  new Webhook(secret).verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature }) as Json;

describe('webhook operations', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ env: LOCAL });
  });
  after(() => s.close());

  it('test: sends a signed ping now and answers with the attempt; the ping is no event of the feed', async () => {
    const receiver = await startReceiver((_r, i) => (i === 0 ? 200 : 503));
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      const ok = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.data.status, 'succeeded');
      assert.equal(ok.body.data.response_status, 200);
      assert.equal(ok.body.data.error, null);
      assert.equal(typeof ok.body.data.duration_ms, 'number');
      assert.equal(receiver.received.length, 1, 'sent before the answer');
      const [got] = receiver.received;
      assert.ok(got);
      const ping = verify(ep.secret, got);
      assert.equal(ping.type, 'ping');
      assert.equal(ping.id, got.id);
      assert.deepEqual(ping.data, { object: { endpoint_id: ep.id }, previous_attributes: null });
      assert.equal(ping.request_id, ok.headers.get('x-request-id'));

      const failed = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key });
      assert.deepEqual({ ...failed.body.data, duration_ms: 0 }, { status: 'failed', response_status: 503, error: null, duration_ms: 0 });

      assert.deepEqual((await s.request('GET', '/v1/events', { key })).body.data, [], 'no event of the feed');
      assert.equal((await s.request('GET', `/v1/events/${got.id}`, { key })).status, 404);
      assert.deepEqual(await attemptsOf(s, key, ep.id), [], 'no delivery listed');
    } finally {
      await receiver.close();
    }
  });

  it('test: a refused connection is the answer, an unknown endpoint a 404, a reading key a 403', async () => {
    const receiver = await startReceiver();
    const closedUrl = receiver.url;
    await receiver.close();
    const { key, accountId } = await writer(s);
    const ep = await endpoint(s, key, closedUrl);
    const res = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/test`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.status, 'failed');
    assert.equal(res.body.data.response_status, null);
    assert.equal(res.body.data.error, 'connection_refused');
    assert.equal((await s.request('POST', '/v1/webhook-endpoints/0b7c1d8e-58a4-4d43-9a3c-6a9f0f4b2a11/test', { key })).status, 404);
    const reader = await s.createKey(accountId, { scopes: ['*:read'] });
    for (const path of ['test', 'replay', 'deliveries/0b7c1d8e-58a4-4d43-9a3c-6a9f0f4b2a11/retry']) {
      const refused = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/${path}`, { key: reader.key, body: {} });
      assert.equal(refused.status, 403, `${path}: ${refused.text}`);
      assert.match(refused.body.type, /\/insufficient_scope$/);
    }
  });

  it('retry: sends a delivery again with the same webhook-id, whatever its status, as one more attempt', async () => {
    // Four failures (the first attempt and the three retries of the schedule), then successes.
    const receiver = await startReceiver((_r, i) => (i < 4 ? 500 : 200));
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      await s.request('POST', '/v1/customers', { key, body: { full_name: 'Maria das Dores', email: 'maria@example.com.br' } });
      const failed = await until('the delivery fails', () => attemptsOf(s, key, ep.id), {
        done: (rows) => rows.some((a) => a.status === 'failed'),
      });
      assert.equal(failed.length, 4);
      const deliveryId = failed[0]?.delivery_id;
      assert.ok(failed.every((a) => a.delivery_id === deliveryId));

      const retried = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${deliveryId}/retry`, { key });
      assert.equal(retried.status, 202, retried.text);
      assert.equal(retried.body.data.delivery_id, deliveryId);
      await receiver.until((r) => r.length >= 5);
      const fifth = await until('the retry is listed', () => attemptsOf(s, key, ep.id), { done: (rows) => rows.length === 5 });
      assert.deepEqual(
        [fifth[0]?.attempt_number, fifth[0]?.status, fifth[0]?.response_status, fifth[0]?.delivery_id],
        [5, 'succeeded', 200, deliveryId],
      );

      // A succeeded delivery goes again too; an attempt's own id names its delivery as well.
      const byAttempt = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${fifth[0]?.id}/retry`, { key });
      assert.equal(byAttempt.status, 202, byAttempt.text);
      assert.equal(byAttempt.body.data.delivery_id, deliveryId);
      await until('the second retry is listed', () => attemptsOf(s, key, ep.id), { done: (rows) => rows.length === 6 });
      assert.equal(receiver.received.length, 6);
      assert.equal(new Set(receiver.received.map((r) => r.id)).size, 1, 'the same webhook-id every time');
      assert.equal(verify(ep.secret, receiver.received[5]!).type, 'customer.created');

      const unknown = '0b7c1d8e-58a4-4d43-9a3c-6a9f0f4b2a11';
      assert.equal((await s.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${unknown}/retry`, { key })).status, 404);
      assert.equal((await s.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/not-an-id/retry`, { key })).status, 404);
      // Another account's endpoint: as if it did not exist.
      const other = await writer(s);
      assert.equal(
        (await s.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${deliveryId}/retry`, { key: other.key })).status,
        404,
      );
    } finally {
      await receiver.close();
    }
  });

  it('deliveries: filter[status] and filter[event_type] with eq and in; other filters are refused', async () => {
    const receiver = await startReceiver((r) => (JSON.parse(r.body).type === 'supplier.created' ? 500 : 200));
    try {
      const { key } = await writer(s);
      const ep = await endpoint(s, key, receiver.url);
      await s.request('POST', '/v1/customers', { key, body: { full_name: 'João Pereira', phone: '+55 11 98765-4321' } });
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'Distribuidora Paulista' } });
      await until('every attempt is listed', () => attemptsOf(s, key, ep.id), {
        done: (rows) => rows.some((a) => a.status === 'failed') && rows.some((a) => a.status === 'succeeded'),
      });
      const statuses = async (query: string) => (await attemptsOf(s, key, ep.id, query)).map((a) => `${a.event_type}:${a.status}`);
      assert.deepEqual(await statuses('?filter[status][eq]=succeeded'), ['customer.created:succeeded']);
      assert.deepEqual(await statuses('?filter[status][in]=retrying,failed&filter[event_type][eq]=customer.created'), []);
      assert.deepEqual(await statuses('?filter[event_type][in]=supplier.created&filter[status][eq]=failed'), ['supplier.created:failed']);
      assert.equal((await statuses('?filter[event_type][eq]=supplier.created')).length, 4);
      for (const [query, detail] of [
        ['filter[response_status][eq]=200', 'filter_field_not_allowed:response_status'],
        ['filter[status][neq]=failed', 'filter_operator_not_allowed:status:neq'],
        ['filter[status][eq]=done', 'filter_value_invalid:status'],
      ]) {
        const res = await s.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?${query}`, { key });
        assert.equal(res.status, 422, query);
        assert.equal(res.body.detail, detail);
      }
    } finally {
      await receiver.close();
    }
  });

  it('replay: queues the subscribed events after a cursor or since a time, in feed order, again with the same webhook-id', async () => {
    const receiver = await startReceiver();
    try {
      const { key } = await writer(s);
      const names = ['Ana Lima', 'Bruno Costa', 'Carla Souza'];
      for (const full_name of names) await s.request('POST', '/v1/customers', { key, body: { full_name, phone: '+55 21 99876-5432' } });
      await s.request('POST', '/v1/suppliers', { key, body: { name: 'Atacadão do Norte' } });
      const first = await s.request('GET', '/v1/events?sort=created_at&limit=1', { key });
      const cursor = first.body.pagination.next_cursor as string;
      const events = (await s.request('GET', '/v1/events?sort=created_at', { key })).body.data as Json[];
      assert.equal(events.length, 4);

      // Created after the events: it has no delivery of them until the replay.
      const ep = await endpoint(s, key, receiver.url, { enabled_events: ['customer.*'] });
      const replayed = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: { after: cursor } });
      assert.equal(replayed.status, 202, replayed.text);
      assert.deepEqual(replayed.body.data, { queued: 2, has_more: false, next_cursor: null });
      await receiver.until((r) => r.length >= 2);
      assert.deepEqual(
        receiver.received.map((r) => r.id).sort(),
        events
          .slice(1, 3)
          .map((e) => e.id)
          .sort(),
      );
      for (const r of receiver.received) assert.equal(JSON.stringify(events.find((e) => e.id === r.id)), r.body);
      // Received is not yet recorded: a replay while an attempt is in flight is that attempt (redelivery.ts), so the
      // next replay waits for both attempts to be recorded.
      await until('the first replay is recorded', () => attemptsOf(s, key, ep.id), { done: (rows) => rows.length === 2 });

      const since = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: { since: '2020-01-01T00:00:00Z' } });
      assert.deepEqual(since.body.data, { queued: 3, has_more: false, next_cursor: null });
      await receiver.until((r) => r.length >= 5);
      assert.deepEqual(new Set(receiver.received.map((r) => r.id)), new Set(events.slice(0, 3).map((e) => e.id)));
      const attempts = await until('the replays are listed', () => attemptsOf(s, key, ep.id), { done: (rows) => rows.length === 5 });
      assert.deepEqual(attempts.map((a) => a.attempt_number).sort(), [1, 1, 1, 2, 2]);

      assertFieldError(await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: {} }), 'after', 'required');
      const both = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, {
        key,
        body: { after: cursor, since: '2020-01-01T00:00:00Z' },
      });
      assertFieldError(both, 'since', 'invalid');
      assertFieldError(
        await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: { after: 'nope' } }),
        'after',
        'invalid_cursor',
      );
      assertFieldError(
        await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: { since: 'yesterday' } }),
        'since',
        'invalid_format',
      );
    } finally {
      await receiver.close();
    }
  });

  it('replay: at most 10 000 events per call, then from the cursor it answers; queued in feed order', async () => {
    const { key, accountId } = await writer(s);
    // Disabled: the deliveries stay queued, so the test reads the queue itself.
    const ep = await endpoint(s, key, 'http://127.0.0.1:9/hook', { enabled: false });
    await sql`
      INSERT INTO events (team_id, mode, id, type, resource, data, created_at)
      SELECT ${accountId}, 'live', gen_random_uuid(), 'customer.created', 'customers', '{"object":{},"previous_attributes":null}',
             now() - interval '1 hour' + n * interval '1 millisecond'
      FROM generate_series(1, 10001) AS n`.execute(s.db);
    const firstCall = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, { key, body: { since: '2020-01-01T00:00:00Z' } });
    assert.equal(firstCall.status, 202, firstCall.text);
    assert.equal(firstCall.body.data.queued, 10_000);
    assert.equal(firstCall.body.data.has_more, true);
    const queue = async () =>
      (
        await sql<{ in_feed_order: boolean; deliveries: number }>`
          SELECT count(*) AS deliveries, bool_and(rank_due = rank_feed) AS in_feed_order
          FROM (SELECT rank() OVER (ORDER BY d.next_attempt_at) AS rank_due, rank() OVER (ORDER BY e.created_at, e.id) AS rank_feed
                FROM webhook_deliveries d JOIN events e ON e.team_id = d.team_id AND e.id = d.event_id
                WHERE d.team_id = ${accountId} AND d.endpoint_id = ${ep.id} AND d.status = 'pending') ranked`.execute(s.db)
      ).rows[0];
    assert.deepEqual(await queue(), { deliveries: 10_000, in_feed_order: true });
    const rest = await s.request('POST', `/v1/webhook-endpoints/${ep.id}/replay`, {
      key,
      body: { after: firstCall.body.data.next_cursor },
    });
    assert.deepEqual(rest.body.data, { queued: 1, has_more: false, next_cursor: null });
    assert.equal(Number((await queue())?.deliveries), 10_001);
  });
});
