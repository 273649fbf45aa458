// Change capture loses and repeats nothing when things fail (docs/events.md, "Nothing lost"): `balcao serve` killed
// (kill -9) while changes are made, and started again at once or after a while; PostgreSQL restarted under it; a
// backlog of 100 000 changes from one UPDATE; two instances on one database, the capturing one killed. After each,
// every committed record has exactly one creation event and no event names a record that was never committed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import postgres from 'postgres';
import { noAnswerWithin, within } from '../src/infra/deadline.ts';
import { captured } from './helpers/captured.ts';
import { citusNodeDir, onCitus, restartCitusNode } from './helpers/citus.ts';
import { startTestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { startOwnPostgres } from './helpers/postgres-server.ts';
import { type Scratch, scratchWithKey, seedAccount, send, type ServeProcess, spawnServe } from './helpers/serve-process.ts';

interface FeedEvent {
  id: string;
  type: string;
  data: { object: { id: string } };
}

/** Every event of the key's tenant, forward. */
async function wholeFeed(url: string, key: string): Promise<FeedEvent[]> {
  const events: FeedEvent[] = [];
  let cursor = '';
  for (;;) {
    const res = await send(url, 'GET', `/v1/events?sort=created_at&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.data);
    cursor = res.body.pagination.next_cursor;
    if (!res.body.pagination.has_more) return events;
  }
}

/** Every customer of the key's tenant. */
async function allCustomers(url: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  for (;;) {
    const res = await send(url, 'GET', `/v1/customers?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    ids.push(...res.body.data.map((c: { id: string }) => c.id));
    if (!res.body.pagination.has_more) return ids;
    cursor = res.body.pagination.next_cursor;
  }
}

/** Exactly one `customer.created` per customer there is, and none for any other. */
function assertOneCreationEach(events: readonly FeedEvent[], customers: readonly string[]): void {
  const created = events.filter((e) => e.type === 'customer.created').map((e) => e.data.object.id);
  assert.equal(new Set(created).size, created.length, 'no creation twice');
  assert.deepEqual([...created].sort(), [...customers].sort(), 'one creation per committed customer, none for another');
  assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event twice');
}

async function readyCapture(server: ServeProcess): Promise<string> {
  const res = await send(server.url, 'GET', '/health/ready');
  return String(res.body?.capture?.state);
}

/** API creations one after another until `stop` says so (at most `max`); the ids answered. */
function createWhile(url: string, key: string, stop: () => boolean, max: number): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true });
  return (async () => {
    const ids: string[] = [];
    for (let i = 0; i < max && !stop(); i++) {
      const res = await send(url, 'POST', '/v1/customers', {
        key,
        agent,
        body: { full_name: `API ${i}`, email: `c${i}@example.com` },
      }).catch(() => undefined);
      if (res?.status === 201) ids.push(res.body.data.id);
      else if (!res) break; // the server is gone
    }
    agent.destroy();
    return ids;
  })();
}

describe('change capture when balcao serve is killed (kill -9)', () => {
  const scratches: Scratch[] = [];
  after(async () => {
    for (const s of scratches) await s.cleanup();
  });

  for (const downFor of [0, 3_000]) {
    it(`makes every committed write an event once, restarted ${downFor ? 'after a while' : 'at once'}`, async () => {
      const scratch = await scratchWithKey();
      scratches.push(scratch);
      const env = { ...scratch.env };
      const first = await spawnServe(env);
      let killed = false;
      const writes = createWhile(first.url, scratch.key, () => killed, 400);
      // Outside writes meanwhile, on PostgreSQL, from a connection of their own (down or up, the slot keeps them).
      const outside = env.DATABASE_URL ? postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} }) : undefined;
      const outsideIds: string[] = [];
      const outsideWrites = (async () => {
        for (let i = 0; outside && i < 30; i++) {
          const id = randomUUID();
          await outside`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${scratch.accountId}, 'live', ${id}, ${`Fora ${i}`})`;
          outsideIds.push(id);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      await until(
        'some writes made',
        async () => Number((await send(first.url, 'GET', '/v1/customers?limit=30', { key: scratch.key })).body.data.length),
        {
          done: (n) => n >= 25,
        },
      );
      first.child.kill('SIGKILL');
      killed = true;
      await first.exited;
      const answered = await writes;
      await outsideWrites;
      await outside?.end();
      await new Promise((resolve) => setTimeout(resolve, downFor));
      const second = await spawnServe(env);
      try {
        const customers = await allCustomers(second.url, scratch.key);
        for (const id of [...answered, ...outsideIds]) assert.ok(customers.includes(id), `${id} was committed`);
        await until('every committed customer in the feed', () => wholeFeed(second.url, scratch.key), {
          done: (events) => events.filter((e) => e.type === 'customer.created').length >= customers.length,
        });
        assertOneCreationEach(await wholeFeed(second.url, scratch.key), customers);
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    });
  }
});

if (process.env.TEST_DATABASE_URL) {
  describe('change capture on PostgreSQL (PostgreSQL pass only: runs when TEST_DATABASE_URL is set)', () => {
    it('loses and repeats nothing across a restart of PostgreSQL', async () => {
      const pg = await startOwnPostgres();
      let server: ServeProcess | undefined;
      try {
        const { url, key, accountId } = await accountOn(pg.url);
        server = await spawnServe({ DATABASE_URL: url });
        const outside = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
        const inserted: string[] = [];
        const insertSome = async (n: number) => {
          for (let i = 0; i < n; i++) {
            const id = randomUUID();
            await outside`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${accountId}, 'live', ${id}, 'Antes')`;
            inserted.push(id);
          }
        };
        await insertSome(50);
        await pg.stop();
        await pg.start();
        await insertSome(50);
        await outside.end();
        const running = server;
        await until('the server captures again', () => readyCapture(running), { done: (state) => state === 'capturing', withinMs: 60_000 });
        await until('all 100 in the feed', () => wholeFeed(running.url, key), {
          done: (events) => events.length >= 100,
          withinMs: 60_000,
        });
        assertOneCreationEach(await wholeFeed(running.url, key), inserted);
      } finally {
        if (server) {
          server.child.kill('SIGTERM');
          await server.exited;
        }
        await pg.destroy();
      }
    });

    it('lets PostgreSQL stop fast while changes flow, and loses and repeats none of them', async () => {
      // A fast stop waits for each logical replication session to confirm all it was sent: a capture that stops
      // reading or confirming when its own database goes away would hold PostgreSQL in "shutting down".
      const pg = await startOwnPostgres();
      let server: ServeProcess | undefined;
      try {
        const { url, key, accountId } = await accountOn(pg.url);
        server = await spawnServe({ DATABASE_URL: url });
        const running = server;
        const answered: string[] = [];
        for (let round = 0; round < 3; round++) {
          await until('the server captures', () => readyCapture(running), { done: (state) => state === 'capturing', withinMs: 60_000 });
          const writes = insertUntilDown(url, accountId, 5_000);
          const before = answered.length;
          await until("this round's writes reach the feed", () => wholeFeed(running.url, key), {
            done: (events) => events.length > before + 20,
            withinMs: 60_000,
          });
          await within(pg.stop(), 60_000, noAnswerWithin("PostgreSQL's fast stop", 60_000));
          answered.push(...(await writes));
          await pg.start();
        }
        const customers = await allCustomers(running.url, key);
        for (const id of answered) assert.ok(customers.includes(id), `${id} was committed`);
        await until('every committed customer in the feed', () => wholeFeed(running.url, key), {
          done: (events) => events.length >= customers.length,
          withinMs: 60_000,
        });
        assertOneCreationEach(await wholeFeed(running.url, key), customers);
      } finally {
        // Killed first: a session it held open would otherwise keep the stop below waiting.
        if (server) {
          server.child.kill('SIGKILL');
          await server.exited;
        }
        await pg.destroy();
      }
    });

    if (onCitus() && process.env.TEST_CITUS_NODE_DIRS)
      it('on Citus, loses and repeats nothing across a restart of the worker that holds the account', async () => {
        const s = await startTestServer();
        try {
          const { account, key } = await s.createAccountWithKey();
          const outside = postgres(s.database.sessionUrl as string, { max: 1, onnotice: () => {}, connect_timeout: 2 });
          const [node] = await outside<{ port: number }[]>`SELECT n.nodeport AS port FROM pg_dist_placement p
            JOIN pg_dist_node n ON n.groupid = p.groupid
            WHERE p.shardid = get_shard_id_for_distribution_column('customers', ${account.id}::uuid)`;
          const dir = citusNodeDir(Number(node?.port));
          assert.ok(dir, `the data directory of the worker on port ${node?.port}`);
          const inserted: string[] = [];
          for (let i = 0; i < 120; i++) {
            if (i === 40) restartCitusNode(dir);
            const id = randomUUID();
            // Refused while the worker restarts (the coordinator cannot reach it): nothing committed, no event.
            const committed =
              await outside`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${account.id}, 'live', ${id}, ${`Nó ${i}`})`.then(
                () => true,
                () => false,
              );
            if (committed) inserted.push(id);
          }
          await outside.end();
          assert.ok(inserted.length >= 80, `most inserts committed (${inserted.length})`);
          await captured(s.database, 60_000);
          const events: FeedEvent[] = [];
          let cursor = '';
          for (;;) {
            const res = await s.request('GET', `/v1/events?sort=created_at&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key });
            events.push(...res.body.data);
            cursor = res.body.pagination.next_cursor;
            if (!res.body.pagination.has_more) break;
          }
          assertOneCreationEach(events, inserted);
          assert.deepEqual(
            events.map((e) => e.data.object.id),
            inserted,
            'in commit order',
          );
        } finally {
          await s.close();
        }
      });

    it('captures a 100 000-row UPDATE of wide rows in a capped heap: one event per row, each once', async () => {
      // The server's heap is capped far below what the transaction's row images take whole (100 000 rows, each with
      // a 1 000-character note before and after): capture holds one part of it at a time (parted-capture.ts).
      // On a PostgreSQL of its own: its long transactions would hold up every other test's slot being made.
      const pg = await startOwnPostgres();
      const { url, accountId } = await accountOn(pg.url);
      const server = await spawnServe({ DATABASE_URL: url, NODE_OPTIONS: '--max-old-space-size=128' });
      const outside = postgres(url, { max: 1, onnotice: () => {} });
      try {
        // Loaded as an import (no events), then changed in one transaction.
        await outside.begin(async (tx) => {
          await tx`SELECT balcao_mark_origin('{"import":true}')`;
          await tx`INSERT INTO capture_marks (team_id, mode, origin) VALUES (${accountId}, 'live', '{"import":true}')`;
          await tx`INSERT INTO customers (team_id, mode, full_name, notes)
            SELECT ${accountId}, 'live', 'Cliente ' || n, repeat('a', 1000) FROM generate_series(1, 100000) n`;
        });
        await outside`UPDATE customers SET notes = repeat('b', 990) || right(id::text, 10), updated_at = now() WHERE team_id = ${accountId}`;
        const exited = server.exited.then((code) =>
          assert.fail(`balcao serve exited (${code}) while capturing: ${server.logs().slice(-400)}`),
        );
        const counts = await Promise.race([
          exited,
          until(
            'the UPDATE captured',
            async () => {
              const [row] = await outside`SELECT count(*)::int AS events, count(DISTINCT data->'object'->>'id')::int AS records,
                count(*) FILTER (WHERE type <> 'customer.updated')::int AS others,
                count(*) FILTER (WHERE data->'object'->>'notes' LIKE 'bbb%' AND data->'previous_attributes'->>'notes' LIKE 'aaa%')::int AS with_notes
              FROM events WHERE team_id = ${accountId}`;
              return row;
            },
            { withinMs: 180_000, done: (row) => Number(row?.events) > 0 },
          ),
        ]);
        assert.deepEqual(counts, { events: 100_000, records: 100_000, others: 0, with_notes: 100_000 });
        assert.equal(await readyCapture(server), 'capturing', 'the capped server is still up and capturing');
      } finally {
        await outside.end();
        server.child.kill('SIGTERM');
        await server.exited;
        await pg.destroy();
      }
    });

    it("captures a transaction too large to hold at once as one: a record changed in two parts is one event, and a mark at its end is every event's origin", async () => {
      const s = await startTestServer();
      try {
        const { account, key, keyId } = await s.createAccountWithKey();
        const kept = await s.request('POST', '/v1/customers', {
          key,
          body: { full_name: 'Kept', phone: '+5511999990000' },
          headers: { 'idempotency-key': randomUUID() },
        });
        assert.equal(kept.status, 201, kept.text);
        const keptId = kept.body.data.id as string;
        const outside = postgres(s.database.sessionUrl as string, { max: 1, onnotice: () => {} });
        const gone = randomUUID();
        // More changes than a part holds (replication-stream.ts PART_CHANGES): Kept's first update and Gone's insert in
        // the first part; a new customer's update, Kept's second and Gone's deletion in the last. The origin mark
        // comes last, as an API write's may.
        await outside.begin(async (tx) => {
          await tx`UPDATE customers SET notes = 'first' WHERE id = ${keptId}`;
          await tx`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${account.id}, 'live', ${gone}, 'Gone')`;
          await tx`INSERT INTO customers (team_id, mode, full_name) SELECT ${account.id}, 'live', 'Lote ' || lpad(n::text, 4, '0')
            FROM generate_series(1, 2500) n`;
          await tx`UPDATE customers SET notes = 'changed later' WHERE team_id = ${account.id} AND full_name = 'Lote 0001'`;
          await tx`UPDATE customers SET notes = 'second' WHERE id = ${keptId}`;
          await tx`DELETE FROM customers WHERE id = ${gone}`;
          // The mark as PostgreSQL reads it (a logical message) and as Citus does (a row on the account's node).
          const origin = JSON.stringify({ key_id: keyId, request_id: 'req_late_mark' });
          await tx`SELECT balcao_mark_origin(${origin})`;
          await tx`INSERT INTO capture_marks (team_id, mode, origin) VALUES (${account.id}, 'live', ${origin})`;
        });
        await outside.end();
        await captured(s.database, 60_000);
        const events = (await wholeFeed(s.url, key)) as (FeedEvent & {
          origin: unknown;
          data: { object: { id: string; full_name: string; notes: string | null }; previous_attributes: unknown };
        })[];
        const [created, ...ofTransaction] = events;
        assert.equal(created?.type, 'customer.created');
        assert.equal(ofTransaction.length, 2_501, 'one event per record: Kept once, each new customer once, none for Gone');
        const [keptEvent, ...batch] = ofTransaction;
        assert.equal(keptEvent?.type, 'customer.updated');
        assert.equal(keptEvent?.data.object.id, keptId);
        assert.equal(keptEvent?.data.object.notes, 'second');
        assert.deepEqual(keptEvent?.data.previous_attributes, { notes: null }, 'from before the transaction to after it');
        assert.ok(
          batch.every((e) => e.type === 'customer.created'),
          'each new customer created',
        );
        assert.deepEqual(
          batch.map((e) => e.data.object.full_name),
          Array.from({ length: 2500 }, (_, i) => `Lote ${String(i + 1).padStart(4, '0')}`),
          'in the order of their first change',
        );
        assert.equal(batch[0]?.data.object.notes, 'changed later', 'a creation changed in a later part shows its last state');
        assert.ok(!events.some((e) => e.data.object.id === gone), 'no event for a record created and deleted within the transaction');
        for (const e of ofTransaction) assert.deepEqual(e.origin, { type: 'api', key_id: keyId, request_id: 'req_late_mark' });
      } finally {
        await s.close();
      }
    });

    it('goes on with another instance when the capturing one is killed', async () => {
      const scratch = await scratchWithKey();
      const env = { ...scratch.env };
      const [a, b] = await Promise.all([spawnServe(env), spawnServe(env)]);
      const servers = [a, b] as ServeProcess[];
      try {
        const states = await until('one instance captures', () => Promise.all(servers.map(readyCapture)), {
          done: (s) => s.filter((x) => x === 'capturing').length === 1 && s.includes('standby'),
        });
        const capturing = servers[states.indexOf('capturing')] as ServeProcess;
        const other = servers[states.indexOf('standby')] as ServeProcess;
        const outside = postgres(env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
        const inserted: string[] = [];
        for (let i = 0; i < 120; i++) {
          if (i === 40) {
            capturing.child.kill('SIGKILL');
            await capturing.exited;
          }
          const id = randomUUID();
          await outside`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${scratch.accountId}, 'live', ${id}, ${`Cliente ${i}`})`;
          inserted.push(id);
        }
        await outside.end();
        await until('the other instance captures', () => readyCapture(other), { done: (state) => state === 'capturing' });
        await until('all 120 in the feed', () => wholeFeed(other.url, scratch.key), { done: (events) => events.length >= 120 });
        assertOneCreationEach(await wholeFeed(other.url, scratch.key), inserted);
      } finally {
        for (const server of servers) {
          server.child.kill('SIGTERM');
          await server.exited;
        }
        await scratch.cleanup();
      }
    });
  });
}

/** Outside inserts, a few milliseconds apart, until the database goes away (at most `max`); the ids whose commit
 *  was answered. */
async function insertUntilDown(url: string, accountId: string, max: number): Promise<string[]> {
  const outside = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  const ids: string[] = [];
  try {
    for (let i = 0; i < max; i++) {
      const id = randomUUID();
      const ok =
        await outside`INSERT INTO customers (team_id, mode, id, full_name) VALUES (${accountId}, 'live', ${id}, ${`Fluxo ${i}`})`.then(
          () => true,
          () => false,
        );
      if (!ok) break;
      ids.push(id);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  } finally {
    await outside.end({ timeout: 1 });
  }
  return ids;
}

/** A database on `adminUrl`'s server, migrated, with an account and a `*:write` key. */
async function accountOn(adminUrl: string): Promise<{ url: string; key: string; accountId: string }> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const name = `capture_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  const { key, accountId } = await seedAccount(url);
  return { url, key, accountId };
}
