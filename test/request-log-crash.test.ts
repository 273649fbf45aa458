// kill -9 of the real `balcao serve` while customers are being created with the client's own X-Request-Id
// (issue 28): a write and its write-log entry commit together, so after the crash every customer has its
// entry and every entry names a customer that exists; a new server lists exactly the committed writes.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { metric, type Scratch, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';

const WRITES = 40;

let scratch: Scratch | undefined;
after(() => scratch?.cleanup());

async function stored(s: Scratch) {
  const database = await openDatabase({ databaseUrl: s.env.DATABASE_URL, dataDir: s.env.BALCAO_DATA_DIR as string }, 'test');
  try {
    const customers = await sql<{ id: string; full_name: string }>`
      SELECT id, full_name FROM customers WHERE team_id = ${s.accountId}`.execute(database.db);
    const entries = await sql<{ request_id: string; resource_id: string }>`
      SELECT request_id, resource_id FROM request_log WHERE team_id = ${s.accountId}`.execute(database.db);
    return { customers: customers.rows, entries: entries.rows };
  } finally {
    await database.close();
  }
}

it('SIGKILL during writes: every committed write has its log entry and no entry lacks its write', async () => {
  scratch = await scratchWithKey();
  const first = await spawnServe(scratch.env);
  const agent = new http.Agent({ keepAlive: true, maxSockets: WRITES });
  const attempts = Array.from({ length: WRITES }, (_, i) =>
    send(first.url, 'POST', '/v1/customers', {
      key: scratch?.key,
      agent,
      body: { full_name: `crash-${i}`, phone: '1' },
      headers: { 'x-request-id': `crash-${i}` },
    }).catch(() => undefined),
  );
  const deadline = Date.now() + 60_000;
  while ((await metric(first.metricsUrl, 'balcao_http_requests_total', 'operation="customers.create"')) < 3) {
    assert.ok(Date.now() < deadline, 'customers are being created');
    await new Promise((r) => setTimeout(r, 5));
  }
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');
  const answered = (await Promise.all(attempts)).filter((a) => a?.status === 201).map((a) => a?.body.data.full_name as string);
  agent.destroy();

  const { customers, entries } = await stored(scratch);
  assert.ok(customers.length >= answered.length);
  const byRequest = new Map(entries.map((e) => [e.request_id, e.resource_id]));
  assert.equal(entries.length, customers.length, 'one entry per committed write');
  for (const c of customers) assert.equal(byRequest.get(c.full_name), c.id, `${c.full_name} has its entry, naming it`);

  const second = await spawnServe(scratch.env);
  try {
    for (let i = 0; i < WRITES; i++) {
      const res = await send(second.url, 'GET', `/v1/requests?filter[request_id][eq]=crash-${i}`, { key: scratch.key });
      assert.equal(res.status, 200, res.text);
      const committed = customers.find((c) => c.full_name === `crash-${i}`);
      if (committed)
        assert.deepEqual(
          res.body.data.map((e: { resource_id: string }) => e.resource_id),
          [committed.id],
        );
      else assert.deepEqual(res.body.data, [], `crash-${i} did not commit: an empty list`);
    }
  } finally {
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  }
});
