// The purges of events (30 days) and of the write log (24 hours), on both engines: every tenant's and
// every key's expired rows go, whatever the mode; newer rows stay. Each walks its tenants' keyset index
// (migration 008 dropped the indexes on created_at alone).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { purgeExpiredEvents } from '../src/events/event-retention.ts';
import { purgeRequestLog } from '../src/resources/engines/request-log.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { captured } from './helpers/captured.ts';
import { writer } from './helpers/write-fixtures.ts';

describe('retention purges', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  /** Three keys of two accounts (one of them in test mode), each with one write of now. */
  async function writers() {
    const live = await writer(s);
    const test = await writer(s, { test: true });
    const secondLive = await writer(s);
    for (const w of [live, test, secondLive]) {
      const created = await s.request('POST', '/v1/customers', { key: w.key, body: { full_name: 'Ana', name: 'Ana', phone: '1' } });
      assert.equal(created.status, 201, created.text);
    }
    await captured(s.database);
    return [live, test, secondLive];
  }

  /** Copies of each account's rows of now, dated `age` ago. */
  async function ageCopies(table: 'events' | 'request_log', accountIds: readonly string[], age: string) {
    const copied =
      table === 'events'
        ? await sql`
            INSERT INTO events (id, team_id, mode, type, resource, data, request_id, created_at)
            SELECT gen_random_uuid(), team_id, mode, type, resource, data, request_id, created_at - cast(${age} as interval)
            FROM events WHERE team_id IN (${sql.join(accountIds)}) AND created_at >= now() - interval '1 hour'`.execute(s.db)
        : await sql`
            INSERT INTO request_log (team_id, id, mode, api_key_id, request_id, method, path, status, idempotency_key, resource, resource_id, created_at)
            SELECT team_id, gen_random_uuid(), mode, api_key_id, request_id, method, path, status, idempotency_key, resource, resource_id,
              created_at - cast(${age} as interval)
            FROM request_log WHERE team_id IN (${sql.join(accountIds)}) AND created_at >= now() - interval '1 hour'`.execute(s.db);
    return Number(copied.numAffectedRows ?? 0);
  }

  const counts = async (table: 'events' | 'request_log', accountIds: readonly string[]) =>
    (
      await sql<{ team_id: string; old: number; recent: number }>`
        SELECT team_id, count(*) FILTER (WHERE created_at < now() - interval '1 hour') AS old,
          count(*) FILTER (WHERE created_at >= now() - interval '1 hour') AS recent
        FROM ${sql.table(table)} WHERE team_id IN (${sql.join(accountIds)}) GROUP BY team_id ORDER BY team_id`.execute(s.db)
    ).rows.map((r) => ({ team_id: r.team_id, old: Number(r.old), recent: Number(r.recent) }));

  it('takes every tenant’s events older than 30 days, in both modes, and keeps the rest', async () => {
    const accounts = (await writers()).map((w) => w.accountId);
    const old = await ageCopies('events', accounts, '31 days');
    const young = await ageCopies('events', accounts, '29 days');
    assert.equal(old, 3);
    assert.equal(young, 3);
    assert.ok((await purgeExpiredEvents(s.db)) >= 3);
    const left = await counts('events', accounts);
    // Each account keeps its event of now and its copy of 29 days ago.
    assert.deepEqual(
      left,
      [...accounts].sort().map((team_id) => ({ team_id, old: 1, recent: 1 })),
    );
  });

  it('takes every key’s write log entries older than 24 hours, in both modes, and keeps the rest', async () => {
    const accounts = (await writers()).map((w) => w.accountId);
    assert.equal(await ageCopies('request_log', accounts, '25 hours'), 3);
    assert.equal(await ageCopies('request_log', accounts, '23 hours'), 3);
    assert.ok((await purgeRequestLog(s.db)) >= 3);
    assert.deepEqual(
      await counts('request_log', accounts),
      [...accounts].sort().map((team_id) => ({ team_id, old: 1, recent: 1 })),
    );
  });
});
