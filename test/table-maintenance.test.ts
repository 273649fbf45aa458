// Table maintenance (src/infra/db/maintenance/table-maintenance.ts), on the suite's real database (PGlite or PostgreSQL):
// statistics for new and grown tables, since plans made without them scan what they should look up (a new sale's
// next number was found by reading the account's every sale), and on PGlite, which has no autovacuum, the vacuuming
// of dead rows. Probe tables are made with autovacuum off, so only the check under test maintains them.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { maintainTables } from '../src/infra/db/maintenance/table-maintenance.ts';
import { numberedSaleInsert } from '../src/resources/writes/transaction-number.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';

type PlanNode = Record<string, any> & { Plans?: PlanNode[] };

let s: TestServer;
before(async () => {
  // The server's own checks are off here: each test calls the check itself, at the moments it chooses.
  s = await startTestServer({ tableMaintenanceEveryMs: 0 });
});
after(() => s?.close());

/** A table's row count as the planner knows it: -1 before its first ANALYZE. */
async function reltuples(server: TestServer, table: string): Promise<number> {
  const { rows } = await sql<{ reltuples: number }>`select reltuples from pg_class where oid = to_regclass(${table})`.execute(server.db);
  return Number(rows[0]?.reltuples);
}

async function probeTable(server: TestServer): Promise<string> {
  const name = `stats_probe_${randomBytes(4).toString('hex')}`;
  await sql.raw(`create table ${name} (id integer primary key, note text) with (autovacuum_enabled = false)`).execute(server.db);
  return name;
}

/** Rows `from`..`to` of about 240 bytes each: some 34 to a page. */
const fill = (server: TestServer, table: string, from: number, to: number) =>
  sql.raw(`insert into ${table} select g, repeat('x', 200) from generate_series(${from}, ${to}) g`).execute(server.db);

test('a table with rows and no statistics is analyzed; an empty one is left alone', async () => {
  const empty = await probeTable(s);
  const filled = await probeTable(s);
  await fill(s, filled, 1, 100);
  assert.equal(await reltuples(s, filled), -1);
  const { analyzed } = await maintainTables(s.database);
  assert.ok(analyzed.includes(filled), `analyzed: ${analyzed.join(', ')}`);
  assert.ok(!analyzed.includes(empty));
  assert.equal(await reltuples(s, filled), 100);
  assert.equal(await reltuples(s, empty), -1);
});

test('a table is analyzed again once it has grown by a tenth and eight pages since', async () => {
  const table = await probeTable(s);
  await fill(s, table, 1, 1000);
  assert.ok((await maintainTables(s.database)).analyzed.includes(table));
  assert.ok(!(await maintainTables(s.database)).analyzed.includes(table), 'not again at the same size');
  await fill(s, table, 1001, 1100);
  assert.ok(!(await maintainTables(s.database)).analyzed.includes(table), 'not for three more pages');
  assert.equal(await reltuples(s, table), 1000);
  await fill(s, table, 1101, 2000);
  assert.ok((await maintainTables(s.database)).analyzed.includes(table), 'again at nearly twice the size');
  assert.equal(await reltuples(s, table), 2000);
});

test("with statistics, a sale's next number is looked up by the number's index, not by reading the account's sales", async () => {
  const account = await s.createAccount();
  const tenant = { accountId: account.id, mode: 'live' } as never;
  await sql`insert into transactions (team_id, mode, transaction_type, transaction_number, status)
    select ${account.id}, 'live', 'sale', g::text, 'pending' from generate_series(1, 2000) g`.execute(s.db);
  await sql`insert into tenant_counters (team_id, mode, name, value) values (${account.id}, 'live', 'transaction_number', 2000)`.execute(
    s.db,
  );
  await maintainTables(s.database);
  assert.ok((await reltuples(s, 'transactions')) >= 2000, 'transactions has statistics');
  // The statement a sale of an account whose counter the process knows sends (EXPLAIN only: nothing is written).
  const sale = { id: randomUUID(), transaction_type: 'sale', status: 'pending', created_at: new Date().toISOString() };
  const followUps = {
    history: { transaction_id: sale.id, old_status: null, new_status: 'pending', change_reason: null, created_at: sale.created_at },
    items: { columns: ['id', 'transaction_id'], rows: [{ id: randomUUID(), transaction_id: sale.id }] },
  };
  const statement = numberedSaleInsert(s.db, tenant, sale, false, followUps, true);
  const { rows } = await s.db.executeQuery<{ 'QUERY PLAN': unknown }>(
    CompiledQuery.raw(`explain (format json) ${statement.sql}`, [...statement.parameters]),
  );
  const raw = rows[0]!['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  const scans = nodes(plan[0]!.Plan).filter((n) => n['Relation Name'] === 'transactions' && n['Node Type'] !== 'ModifyTable');
  assert.equal(scans.length, 1, JSON.stringify(scans));
  assert.match(String(scans[0]!['Index Cond']), /transaction_number = /, JSON.stringify(scans[0]));
});

test('dead rows are vacuumed on PGlite, which has no autovacuum, and left to autovacuum on PostgreSQL', async () => {
  const table = await probeTable(s);
  await fill(s, table, 1, 1000);
  await maintainTables(s.database);
  await sql.raw(`delete from ${table} where id <= 600`).execute(s.db);
  // A session reports its deletions to the statistics at most once a second: the check counts them once reported.
  const reported = Date.now() + 20_000;
  const deadRows = async () =>
    Number(
      (await sql<{ dead: number }>`select n_dead_tup as dead from pg_stat_user_tables where relname = ${table}`.execute(s.db)).rows[0]
        ?.dead,
    );
  while ((await deadRows()) < 600 && Date.now() < reported) await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(await deadRows(), 600);
  const done = await maintainTables(s.database);
  if (s.database.engine === 'pglite') {
    assert.deepEqual(
      [done.vacuumed.includes(table), done.analyzed.includes(table)],
      [true, false],
      'vacuumed (and analyzed with it), not merely analyzed',
    );
    assert.equal(await deadRows(), 0);
    assert.equal(await reltuples(s, table), 400);
  } else {
    assert.ok(!done.vacuumed.includes(table) && !done.analyzed.includes(table), JSON.stringify(done));
    assert.equal(await deadRows(), 600);
  }
});

test('a serving app analyzes a new table with rows by itself', async () => {
  const own = await startTestServer({ tableMaintenanceEveryMs: 50 });
  try {
    const table = await probeTable(own);
    await fill(own, table, 1, 500);
    // Readiness, not timing: wait (bounded) for the app's check to have run since the rows arrived.
    const deadline = Date.now() + 20_000;
    while ((await reltuples(own, table)) < 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(await reltuples(own, table), 500);
  } finally {
    await own.close();
  }
});
