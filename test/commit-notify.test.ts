// The wake-ups of events (LISTEN/NOTIFY) leave after the write commits, never from inside it: a NOTIFY
// in a transaction takes a cluster-wide lock held through that transaction's commit, so every writer
// would commit one at a time (src/events/commit-notifier.ts). Over HTTP against the real server, with the
// statements the app sends recorded; and the notifier itself against a real listener.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DELIVERIES_CHANNEL, EVENTS_CHANNEL, tenantChannelKey } from '../src/events/channels.ts';
import { CommitNotifier } from '../src/events/commit-notifier.ts';
import { openTestDatabase, startTestServer, type TestServer } from './helpers/harness.ts';
import { StatementRecorder } from './helpers/statement-recorder.ts';

const isEventInsert = (text: string) => /INSERT INTO events/i.test(text);
const isNotify = (text: string) => /pg_notify/i.test(text);

/** Listens on `channel` (resolves once the LISTEN is in place); `done` resolves with the payloads once `count` have come. */
async function listening(listen: TestServer['database']['listen'], channel: string, count: number, ms = 10_000) {
  const payloads: string[] = [];
  let arrived: (payloads: string[]) => void = () => {};
  const done = new Promise<string[]>((resolve) => {
    arrived = resolve;
  });
  const stop = await listen(channel, (payload) => {
    payloads.push(payload);
    if (payloads.length === count) arrived(payloads);
  });
  let timer: NodeJS.Timeout | undefined;
  const bounded = Promise.race([
    done,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${payloads.length} of ${count} NOTIFYs on ${channel} within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
  bounded.catch(() => {}); // a test that failed before awaiting it has its own failure to report
  return { done: bounded, stop };
}

describe('event wake-ups after the commit', () => {
  const recorder = new StatementRecorder(true);
  let s: TestServer;

  before(async () => {
    s = await startTestServer({ plugin: recorder });
  });
  after(async () => {
    await s?.close();
  });

  it("sends no NOTIFY from a write's own statements, and one after its commit that wakes the tenant's listeners", async () => {
    const { account, key } = await s.createAccountWithKey({ modules: 'all' });
    const tenant = tenantChannelKey(account.id, 'live');
    const wake = await listening((channel, onPayload) => s.database.listen(channel, onPayload), EVENTS_CHANNEL, 1);
    const from = recorder.nodes.length;
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', email: 'ana@example.com' } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(await wake.done, [tenant]);
    await wake.stop();

    const sent = recorder.texts(from);
    const eventAt = sent.findIndex(isEventInsert);
    assert.ok(eventAt >= 0, 'the write recorded its event');
    assert.equal(isNotify(sent[eventAt] as string), false, "the event's statement (inside the write) notifies no one");
    const notifies = sent.filter(isNotify);
    assert.equal(notifies.length, 1, 'one NOTIFY statement for the write');
    assert.ok(sent.findIndex(isNotify) > eventAt, 'the NOTIFY is sent after the write');
    assert.equal(isEventInsert(notifies[0] as string), false, 'the NOTIFY is a statement of its own');
  });

  it('wakes no one for an atomic batch that rolls back, and after the commit of one that commits', async () => {
    const { account, key } = await s.createAccountWithKey({ modules: 'all' });
    const wake = await listening((channel, onPayload) => s.database.listen(channel, onPayload), EVENTS_CHANNEL, 1);
    const from = recorder.nodes.length;
    const refused = await s.request('POST', '/v1/batch', {
      key,
      body: {
        atomic: true,
        operations: [
          { method: 'POST', path: '/v1/customers', body: { full_name: 'Bia', email: 'bia@example.com' } },
          { method: 'POST', path: '/v1/customers', body: { full_name: '', email: 'x@example.com' } },
        ],
      },
    });
    assert.equal(refused.status, 200, refused.text);
    assert.deepEqual(
      refused.body.data.map((r: { status: number }) => r.status),
      [424, 422],
    );
    const committed = await s.request('POST', '/v1/batch', {
      key,
      body: {
        atomic: true,
        operations: [{ method: 'POST', path: '/v1/customers', body: { full_name: 'Caio', email: 'caio@example.com' } }],
      },
    });
    assert.equal(committed.status, 200, committed.text);
    assert.equal(committed.body.data[0].status, 201);
    // Wake-ups leave in the order their writes committed: once the committed batch's has arrived, one for
    // the refused batch would have been sent before it.
    assert.deepEqual(await wake.done, [tenantChannelKey(account.id, 'live')]);
    await wake.stop();
    assert.equal(recorder.texts(from).filter(isNotify).length, 1, 'the committed batch woke its tenant; the refused one, no one');
  });
});

describe('CommitNotifier', () => {
  it('sends the tenants committed in one turn in one statement, each woken once, and the deliveries channel once', async () => {
    const database = await openTestDatabase();
    const recorder = new StatementRecorder(true);
    const notifier = new CommitNotifier(database.db.withPlugin(recorder));
    const events = await listening(database.listen.bind(database), EVENTS_CHANNEL, 3);
    const deliveries = await listening(database.listen.bind(database), DELIVERIES_CHANNEL, 1);
    try {
      notifier.committed('a:live', false);
      notifier.committed('b:live', true);
      notifier.committed('a:live', false);
      notifier.committed('c:test', false);
      await notifier.flushed();
      assert.deepEqual((await events.done).sort(), ['a:live', 'b:live', 'c:test']);
      assert.deepEqual(await deliveries.done, ['']);
      assert.equal(recorder.texts().filter(isNotify).length, 1, 'one statement');
    } finally {
      await events.stop();
      await deliveries.stop();
      await database.close();
      await database.drop();
    }
  });

  it('reports a failed NOTIFY and goes on with the next', async () => {
    const database = await openTestDatabase();
    const failures: unknown[] = [];
    const notifier = new CommitNotifier(database.db, (err) => failures.push(err));
    await database.close();
    notifier.committed('a:live', false);
    await notifier.flushed();
    assert.equal(failures.length, 1, 'the failure is reported, not thrown');
    await database.drop();
  });
});
