// kill -9 of the real `balcao serve` while sales of 200 items are being created. After the crash no sale lacks
// its items or its first history entry and every stored idempotent response names a sale that exists (it
// committed with it). Retrying every request with its Idempotency-Key then gives exactly one sale per key: a
// committed one replays, and a claim that never committed is free again within its 5 s lease.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { item } from './helpers/write-fixtures.ts';
import { metric, type Scratch, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';
import { until } from './helpers/poll.ts';

const SALES = 30;
const ITEMS = Array.from({ length: 200 }, (_, i) => item({ quantity: 1 + (i % 3), unit_price: 10 + i }));
const bodyOf = (i: number) => ({ items: ITEMS, notes: `crash-${i}` });

let scratch: Scratch | undefined;
after(() => scratch?.cleanup());

/** The database as the server left it (PGlite is opened only while no server holds it). */
async function integrity(s: Scratch) {
  const database = await openDatabase({ databaseUrl: s.env.DATABASE_URL, dataDir: s.env.BALCAO_DATA_DIR as string }, 'test');
  try {
    const sales = await sql<{ id: string; notes: string; items: number; history: number }>`
      SELECT t.id, t.notes,
        (SELECT count(*) FROM transaction_items i WHERE i.transaction_id = t.id)::int AS items,
        (SELECT count(*) FROM transaction_status_history h WHERE h.transaction_id = t.id)::int AS history
      FROM transactions t WHERE t.team_id = ${s.accountId}`.execute(database.db);
    const records = await sql<{ idempotency_key: string; state: string; response_body: string | null }>`
      SELECT idempotency_key, state, response_body FROM idempotency_keys WHERE api_key_id = ${s.keyId}`.execute(database.db);
    return { sales: sales.rows, records: records.rows };
  } finally {
    await database.close();
  }
}

it('SIGKILL during sales of 200 items: nothing partial, and retries give exactly one sale per Idempotency-Key', async () => {
  scratch = await scratchWithKey();
  const first = await spawnServe(scratch.env);
  const agent = new http.Agent({ keepAlive: true, maxSockets: SALES });
  const attempts = Array.from({ length: SALES }, (_, i) =>
    send(first.url, 'POST', '/v1/sales', { key: scratch?.key, agent, body: bodyOf(i), headers: { 'idempotency-key': `crash-${i}` } }).catch(
      () => undefined,
    ),
  );
  // Kill once some sales committed and others are still running.
  await until('three sales are answered', () => metric(first.metricsUrl, 'balcao_http_requests_total', 'operation="sales.create"'), {
    done: (answered) => answered >= 3,
    withinMs: 60_000,
    everyMs: 20,
  });
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');
  const answered = (await Promise.all(attempts)).filter((a) => a?.status === 201).length;
  agent.destroy();

  const afterCrash = await integrity(scratch);
  assert.ok(afterCrash.sales.length >= answered, 'every answered sale is there');
  for (const sale of afterCrash.sales) {
    assert.equal(sale.items, 200, `sale ${sale.notes} has all its items`);
    assert.equal(sale.history, 1, `sale ${sale.notes} has its first history entry`);
  }
  const saleIds = new Set(afterCrash.sales.map((x) => x.id));
  for (const record of afterCrash.records) {
    if (record.state !== 'done') continue;
    const stored = JSON.parse(record.response_body ?? '{}');
    assert.ok(saleIds.has(stored.data.id), `the stored response of ${record.idempotency_key} names a sale that exists`);
  }
  // Every committed sale has its stored response (they committed together).
  const done = new Set(afterCrash.records.filter((r) => r.state === 'done').map((r) => r.idempotency_key));
  for (const sale of afterCrash.sales) assert.ok(done.has(sale.notes), `${sale.notes} can be replayed`);

  const second = await spawnServe(scratch.env);
  try {
    const retryAgent = new http.Agent({ keepAlive: true, maxSockets: 10 });
    const ids = await Promise.all(
      Array.from({ length: SALES }, async (_, i) => {
        // The client protocol: 409 (in progress) and 503 (busy) say "retry after Retry-After"; a dead claim's lease is 5 s.
        const until = Date.now() + 60_000;
        for (;;) {
          const res = await send(second.url, 'POST', '/v1/sales', {
            key: scratch?.key,
            agent: retryAgent,
            body: bodyOf(i),
            headers: { 'idempotency-key': `crash-${i}` },
          });
          if (res.status === 201) {
            assert.equal(res.body.data.notes, `crash-${i}`);
            assert.equal(res.body.data.items.length, 200);
            if (done.has(`crash-${i}`)) assert.equal(res.headers['idempotent-replay'], 'true', 'a committed sale replays');
            return res.body.data.id as string;
          }
          assert.ok(res.status === 409 || res.status === 503, res.text);
          assert.equal(res.headers['retry-after'], '1');
          assert.ok(Date.now() < until, `crash-${i} stays blocked`);
          await new Promise((r) => setTimeout(r, Number(res.headers['retry-after'] ?? 1) * 1000));
        }
      }),
    );
    retryAgent.destroy();
    assert.equal(new Set(ids).size, SALES);
  } finally {
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  }
  const final = await integrity(scratch);
  assert.equal(final.sales.length, SALES, 'exactly one sale per key');
  assert.deepEqual(final.sales.map((x) => x.notes).sort(), Array.from({ length: SALES }, (_, i) => `crash-${i}`).sort());
  for (const sale of final.sales) assert.deepEqual([sale.items, sale.history], [200, 1]);
});
