// ETags and conditional requests (issue 28): a strong tag per record version on reads and writes,
// 304 on If-None-Match, 412 on a stale If-Match with nothing written, and the If-Match race.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nextVersion } from '../src/query/version.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { item, writer } from './helpers/write-fixtures.ts';

const STRONG = /^"[A-Za-z0-9_-]+"$/;

describe('ETags and conditional requests', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('tags a record the same on POST and every representation, and changes it when and only when the record changes', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/sales', { key, body: { items: [item()] } });
    assert.equal(created.status, 201, created.text);
    const tag = created.headers.get('etag') as string;
    assert.match(tag, STRONG);
    const id = created.body.data.id;
    for (const query of ['', '?fields=status', '?include=items,status_history', '?fields=total_amount&include=items']) {
      const read = await s.request('GET', `/v1/sales/${id}${query}`, { key });
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('etag'), tag, query);
      assert.equal(read.body.data.__version, undefined);
    }
    // A PATCH that changes nothing visible is still a write: a new version.
    const patched = await s.request('PATCH', `/v1/sales/${id}`, { key, body: { notes: 'n' } });
    assert.equal(patched.status, 200, patched.text);
    const tag2 = patched.headers.get('etag') as string;
    assert.notEqual(tag2, tag);
    assert.equal((await s.request('GET', `/v1/sales/${id}`, { key })).headers.get('etag'), tag2);
    // Two writes in quick succession never share a tag (updated_at moves strictly forward).
    const tags = new Set([tag, tag2]);
    for (let i = 0; i < 5; i++) {
      const res = await s.request('PATCH', `/v1/sales/${id}`, { key, body: { status: i % 2 ? 'pending' : 'completed' } });
      tags.add(res.headers.get('etag') as string);
    }
    assert.equal(tags.size, 7);
    const deleted = await s.request('DELETE', `/v1/sales/${id}`, { key });
    assert.equal(deleted.status, 204);
    const tag3 = deleted.headers.get('etag') as string;
    assert.ok(!tags.has(tag3));
    assert.equal((await s.request('GET', `/v1/sales/${id}`, { key })).headers.get('etag'), tag3);
    // A read changes nothing.
    assert.equal((await s.request('GET', `/v1/sales/${id}`, { key })).headers.get('etag'), tag3);
  });

  it('replays an idempotent creation as stored, with its first tag, whatever the record became since', async () => {
    const { key } = await writer(s);
    const body = { full_name: 'Replay', phone: '1' };
    const first = await s.request('POST', '/v1/customers', { key, body, headers: { 'idempotency-key': 'etag-replay' } });
    const changed = await s.request('PATCH', `/v1/customers/${first.body.data.id}`, { key, body: { notes: 'later' } });
    assert.notEqual(changed.headers.get('etag'), first.headers.get('etag'));
    const replay = await s.request('POST', '/v1/customers', { key, body, headers: { 'idempotency-key': 'etag-replay' } });
    assert.equal(replay.headers.get('idempotent-replay'), 'true');
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('etag'), first.headers.get('etag'));
  });

  it('tags every readable resource on GET by id', async () => {
    const { key } = await writer(s);
    for (const [path, body] of [
      ['customers', { full_name: 'A', phone: '1' }],
      ['suppliers', { name: 'S' }],
      ['expenses', { expense_type: 'fixed', description: 'd', original_amount: 1, final_amount: 1 }],
    ] as const) {
      const created = await s.request('POST', `/v1/${path}`, { key, body });
      assert.equal(created.status, 201, created.text);
      const read = await s.request('GET', `/v1/${path}/${created.body.data.id}`, { key });
      assert.equal(read.headers.get('etag'), created.headers.get('etag'), path);
    }
  });

  it('answers 304 with no body, the tag, the request id and the rate-limit headers to a current If-None-Match', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'B', phone: '2' } });
    const tag = created.headers.get('etag') as string;
    const path = `/v1/customers/${created.body.data.id}`;
    for (const header of [tag, `"nope", ${tag}`, '*', `W/${tag}`]) {
      const res = await s.request('GET', path, { key, headers: { 'if-none-match': header, 'x-request-id': 'cond-get-1' } });
      assert.equal(res.status, 304, header);
      assert.equal(res.text, '');
      // No length or type of a body it does not carry: a client that trusts Content-Length would wait for it.
      assert.equal(res.headers.get('content-length'), null, header);
      assert.equal(res.headers.get('content-type'), null, header);
      assert.equal(res.headers.get('etag'), tag);
      assert.equal(res.headers.get('x-request-id'), 'cond-get-1');
      assert.ok(res.headers.get('x-ratelimit-limit'));
      assert.ok(res.headers.get('x-ratelimit-reset'));
    }
    const stale = await s.request('GET', path, { key, headers: { 'if-none-match': '"other"' } });
    assert.equal(stale.status, 200);
    assert.equal(stale.body.data.full_name, 'B');
  });

  it('answers a conditional GET with includes: 304 while the sale is unchanged, the sale and its includes once it changed', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/sales', { key, body: { items: [item(), item()] } });
    const path = `/v1/sales/${created.body.data.id}?include=items,status_history`;
    const tag = created.headers.get('etag') as string;
    const current = await s.request('GET', path, { key, headers: { 'if-none-match': tag } });
    assert.equal(current.status, 304);
    assert.equal(current.text, '');
    assert.equal(current.headers.get('etag'), tag);
    const changed = await s.request('PATCH', `/v1/sales/${created.body.data.id}`, { key, body: { status: 'completed' } });
    assert.equal(changed.status, 200, changed.text);
    const fresh = await s.request('GET', path, { key, headers: { 'if-none-match': tag } });
    assert.equal(fresh.status, 200);
    assert.equal(fresh.headers.get('etag'), changed.headers.get('etag'));
    assert.equal(fresh.body.data.items.length, 2);
    assert.deepEqual(
      fresh.body.data.status_history.map((h: { new_status: string }) => h.new_status),
      ['pending', 'completed'],
    );
    const again = await s.request('GET', path, { key, headers: { 'if-none-match': `"other", ${changed.headers.get('etag')}` } });
    assert.equal(again.status, 304);
    // Another account's sale, or none, stays a 404 whatever the tag.
    const other = await writer(s);
    const foreign = await s.request('GET', path, { key: other.key, headers: { 'if-none-match': '*' } });
    assert.equal(foreign.status, 404);
  });

  it('refuses a stale If-Match with 412 precondition_failed and writes nothing; * and the current tag pass', async () => {
    const { key } = await writer(s);
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'C', phone: '3' } });
    const path = `/v1/customers/${created.body.data.id}`;
    const first = created.headers.get('etag') as string;
    // A second client changes it.
    const other = await s.request('PATCH', path, { key, body: { notes: 'second client' } });
    assert.equal(other.status, 200);
    const stale = await s.request('PATCH', path, { key, body: { full_name: 'lost update' }, headers: { 'if-match': first } });
    assert.equal(stale.status, 412, stale.text);
    assert.match(stale.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.match(stale.body.type, /\/precondition_failed$/);
    assert.equal(stale.body.status, 412);
    const del = await s.request('DELETE', path, { key, headers: { 'if-match': first } });
    assert.equal(del.status, 412);
    const now = await s.request('GET', path, { key });
    assert.equal(now.body.data.full_name, 'C');
    assert.equal(now.body.data.is_active, true);
    assert.equal(now.headers.get('etag'), other.headers.get('etag'));

    const ok = await s.request('PATCH', path, {
      key,
      body: { full_name: 'D' },
      headers: { 'if-match': now.headers.get('etag') as string },
    });
    assert.equal(ok.status, 200, ok.text);
    const star = await s.request('PATCH', path, { key, body: { full_name: 'E' }, headers: { 'if-match': '*' } });
    assert.equal(star.status, 200);
    const gone = await s.request('DELETE', path, { key, headers: { 'if-match': `"x", ${star.headers.get('etag')}` } });
    assert.equal(gone.status, 204);
    // A record that does not exist (or is another account's) stays a 404, even with *.
    const missing = await s.request('PATCH', '/v1/customers/00000000-0000-4000-8000-000000000000', {
      key,
      body: { full_name: 'F' },
      headers: { 'if-match': '*' },
    });
    assert.equal(missing.status, 404);
  });

  it('lets exactly one of two concurrent PATCHes with the same tag through, the other gets 412', async () => {
    const { key } = await writer(s);
    for (let round = 0; round < 5; round++) {
      const created = await s.request('POST', '/v1/sales', { key, body: { items: [item()] } });
      const path = `/v1/sales/${created.body.data.id}`;
      const tag = created.headers.get('etag') as string;
      const send = (status: string) => s.request('PATCH', path, { key, body: { status }, headers: { 'if-match': tag } });
      const [a, b] = await Promise.all([send('completed'), send('cancelled')]);
      assert.deepEqual([a.status, b.status].sort(), [200, 412], `${a.text} ${b.text}`);
      const winner = a.status === 200 ? a : b;
      const read = await s.request('GET', `${path}?include=status_history`, { key });
      assert.equal(read.body.data.status, winner.body.data.status);
      assert.equal(read.body.data.status_history.length, 2);
      assert.equal(read.headers.get('etag'), winner.headers.get('etag'));
    }
  });
});

describe('the version a change gives a record', () => {
  it('is the transaction time, or one microsecond past the current version when that is not earlier', () => {
    assert.deepEqual(nextVersion(null, '20261126075527753123'), {
      version: '20261126075527753123',
      updatedAt: '2026-11-26T07:55:27.753123Z',
    });
    assert.equal(nextVersion('20261126075527000001', '20261126075527753123').version, '20261126075527753123');
    // Two changes in one microsecond, and a clock stepped back: strictly forward all the same, with carries.
    assert.deepEqual(nextVersion('20261126075527753123', '20261126075527753123'), {
      version: '20261126075527753124',
      updatedAt: '2026-11-26T07:55:27.753124Z',
    });
    assert.deepEqual(nextVersion('20261231235959999999', '20261126075527753123'), {
      version: '20270101000000000000',
      updatedAt: '2027-01-01T00:00:00.000000Z',
    });
  });
});
