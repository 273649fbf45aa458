// No key's plaintext, nor its 32-character secret part, is kept anywhere: a representative run of requests
// against the real `balcao serve` (successes, refusals, writes with Idempotency-Keys, keys sent in the wrong
// places, a revoked key), then its logs and a dump of every row of every table (and, with the embedded engine,
// every byte of its data directory) are scanned for each issued key.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, it } from 'node:test';
import { sql } from 'kysely';
import { createKey, revokeKey } from '../src/accounts/key-repository.ts';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { item } from './helpers/write-fixtures.ts';
import { type Scratch, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';

let scratch: Scratch | undefined;
after(() => scratch?.cleanup());

const open = (s: Scratch) => openDatabase({ databaseUrl: s.env.DATABASE_URL, dataDir: s.env.BALCAO_DATA_DIR as string }, 'test');

/** Every row of every table of the public schema, as text. */
async function dumpRows(s: Scratch): Promise<string> {
  const database = await open(s);
  try {
    const tables = await sql<{ name: string }>`
      SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(
      database.db,
    );
    const parts: string[] = [];
    for (const { name } of tables.rows) {
      const rows = await sql<{ row: string }>`SELECT t::text AS row FROM ${sql.table(name)} t`.execute(database.db);
      parts.push(`-- ${name}\n${rows.rows.map((r) => r.row).join('\n')}`);
    }
    return parts.join('\n');
  } finally {
    await database.close();
  }
}

function filesUnder(dir: string): Buffer[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const full = path.join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name);
    return entry.isFile() ? [fs.readFileSync(full)] : [];
  });
}

it('no issued key, whole or its secret part, appears in the logs or the database', async () => {
  scratch = await scratchWithKey();
  const database = await open(scratch);
  const second = await createKey(database.db, {
    accountId: scratch.accountId,
    name: 'second',
    mode: 'test',
    scopes: ['customers:read'],
    allowedIps: [],
    expiresAt: null,
    brand: 'balcao',
  });
  const revoked = await createKey(database.db, {
    accountId: scratch.accountId,
    name: 'revoked',
    mode: 'live',
    scopes: ['*:read'],
    allowedIps: [],
    expiresAt: null,
    brand: 'balcao',
  });
  await revokeKey(database.db, revoked.row.id);
  await database.close();
  const keys = [scratch.key, second.key, revoked.key];

  const server = await spawnServe({ ...scratch.env, LOG_LEVEL: 'trace' });
  const agent = new http.Agent({ keepAlive: true });
  const call = (method: string, p: string, options: Parameters<typeof send>[3] = {}) => send(server.url, method, p, { agent, ...options });
  const [main, test, gone] = keys as [string, string, string];
  const created = await call('POST', '/v1/customers', {
    key: main,
    body: { full_name: 'Ana', phone: '1' },
    headers: { 'idempotency-key': 'secret-idem-1' },
  });
  assert.equal(created.status, 201);
  await call('POST', '/v1/sales', { key: main, body: { items: [item()] }, headers: { 'idempotency-key': 'secret-idem-2' } });
  await call('POST', '/v1/sales', { key: main, body: { items: [] }, headers: { 'idempotency-key': 'secret-idem-3' } });
  await call('PATCH', `/v1/customers/${created.body.data.id}`, { key: main, body: { notes: 'changed' } });
  await call('GET', `/v1/customers?filter[full_name]=${main}`, { key: main });
  await call('GET', '/v1/customers', { key: test });
  await call('POST', '/v1/customers', { key: test, body: { full_name: 'x' } });
  await call('GET', '/v1/me', { key: gone });
  await call('GET', '/v1/me', { key: `${main.slice(0, -1)}x` });
  await call('GET', `/v1/me?api_key=${main}`);
  await call('GET', `/v1/nowhere/${main}`, { key: main });
  await call('GET', '/v1/me', { headers: { authorization: `Basic ${main}`, 'x-api-key': main } });
  await call('DELETE', `/v1/customers/${created.body.data.id}`, { key: main });
  agent.destroy();
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  const logs = server.logs();
  assert.ok(logs.split('\n').length > 10, 'the run logged');
  const rows = await dumpRows(scratch);
  assert.match(rows, /secret-idem-1/, 'the dump holds the data');
  // With the embedded engine, the raw bytes of its files too (pages, WAL).
  const stored = Buffer.concat(filesUnder(scratch.env.DATABASE_URL ? '' : (scratch.env.BALCAO_DATA_DIR as string))).toString('latin1');
  for (const key of keys) {
    const secret = key.split('_')[2]?.slice(0, 32) as string;
    assert.equal(secret.length, 32);
    for (const [where, text] of [
      ['the logs', logs],
      ['the database dump', rows],
      ['the stored files', stored],
    ] as const) {
      assert.equal(text.includes(key), false, `${where} hold a key`);
      assert.equal(text.includes(secret), false, `${where} hold a key's secret part`);
    }
  }
  assert.doesNotMatch(logs, /secret-idem-/, 'no Idempotency-Key value in the logs');
});
