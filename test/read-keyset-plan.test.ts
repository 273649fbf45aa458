// Page 1 000 costs what page 1 costs: the compiled page queries are index range scans on the
// (team_id, mode, <sort>, id) keyset indexes — no Sort node, no OFFSET, no rows read and thrown
// away — shown with EXPLAIN ANALYZE on the real database (PGlite or PostgreSQL).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { compileList, listStatement } from '../src/query/compile.ts';
import { encodeCursor } from '../src/query/cursor.ts';
import { parseQuery } from '../src/query/parse.ts';
import { planList } from '../src/query/plan.ts';
import { customers } from '../src/resources/descriptors/customers.ts';
import type { ResourceDescriptor } from '../src/resources/descriptor.ts';
import { sales } from '../src/resources/descriptors/sales.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';
import { insertRows } from './helpers/read-data.ts';

type PlanNode = Record<string, any> & { Plans?: PlanNode[] };

const ROWS = 4000;
const LIMIT = 20;
let s: TestServer;
let scope: { accountId: string; mode: 'live' };

before(async () => {
  s = await startTestServer();
  const account = await s.createAccount();
  const neighbour = await s.createAccount();
  scope = { accountId: account.id, mode: 'live' };
  const start = Date.UTC(2025, 0, 1);
  const customerRows = (i: number) => ({
    full_name: `c${i}`,
    created_at: new Date(start + i * 60_000),
    updated_at: i % 2 ? null : new Date(start + i * 1000),
  });
  await insertRows(
    s.db,
    'customers',
    scope,
    Array.from({ length: ROWS }, (_, i) => customerRows(i)),
  );
  await insertRows(
    s.db,
    'customers',
    { accountId: account.id, mode: 'test' },
    Array.from({ length: 500 }, (_, i) => customerRows(i)),
  );
  await insertRows(
    s.db,
    'customers',
    { accountId: neighbour.id, mode: 'live' },
    Array.from({ length: 500 }, (_, i) => customerRows(i)),
  );
  const saleRows = (i: number) => ({ total_amount: i % 4 === 0 ? null : (i % 97) + 0.5, created_at: new Date(start + i * 60_000) });
  await insertRows(
    s.db,
    'transactions',
    scope,
    Array.from({ length: ROWS }, (_, i) => saleRows(i)),
  );
  await insertRows(
    s.db,
    'transactions',
    scope,
    Array.from({ length: 500 }, (_, i) => ({ ...saleRows(i), transaction_type: 'quote' })),
  );
  await sql`analyze customers`.execute(s.db);
  await sql`analyze transactions`.execute(s.db);
});
after(async () => s?.close());

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** EXPLAIN ANALYZE of every segment query of a page. */
async function explainPage(d: ResourceDescriptor, query: Record<string, string>): Promise<PlanNode[][]> {
  const plan = planList(d, parseQuery(query));
  const segments = compileList(s.db, d, plan, scope).map((q) => q.limit(plan.limit + 1).compile());
  for (const c of segments) assert.doesNotMatch(c.sql, /\boffset\b/i);
  return s.db.transaction().execute(async (trx) => {
    // These tables are small, so by estimate a heap scan or a bitmap scan plus a sort of the few
    // remaining rows costs about the same; with a million rows the LIMIT makes the ordered index
    // range scan the only cheap plan. What is shown here is that the compiled query has one.
    await sql`set local enable_seqscan = off`.execute(trx);
    await sql`set local enable_bitmapscan = off`.execute(trx);
    const out: PlanNode[][] = [];
    for (const c of segments) {
      const res = await trx.executeQuery<Record<string, unknown>>(
        CompiledQuery.raw(`explain (analyze, format json) ${c.sql}`, [...c.parameters]),
      );
      const raw = Object.values(res.rows[0] as object)[0];
      const json = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
      out.push(nodes(json[0]!.Plan));
    }
    return out;
  });
}

/** Each segment: one index scan on the keyset index, no sort, nothing read beyond the page. */
function assertKeysetScan(segments: PlanNode[][], index: string, where: string): void {
  for (const all of segments) {
    const types = all.map((n) => n['Node Type']);
    assert.ok(!types.some((t) => /Sort|Seq Scan|Bitmap/.test(t)), `${where}: ${types.join(' > ')}`);
    const scan = all.find((n) => n['Node Type'] === 'Index Scan' || n['Node Type'] === 'Index Only Scan');
    assert.ok(scan, `${where}: no index scan in ${types.join(' > ')}`);
    assert.equal(scan['Index Name'], index, where);
    assert.ok(scan['Actual Rows'] <= LIMIT + 1, `${where}: read ${scan['Actual Rows']} rows`);
    assert.equal(scan['Rows Removed by Filter'] ?? 0, 0, `${where}: rows were read and thrown away`);
  }
}

async function cursorAt(d: ResourceDescriptor, table: string, sort: string, position: number, where = sql`true`): Promise<string> {
  const desc = sort.startsWith('-');
  const field = desc ? sort.slice(1) : sort;
  const dir = sql.raw(desc ? 'desc' : 'asc');
  const kind = d.row.properties[field]?.['x-balcao-type'];
  const value =
    kind === 'timestamp'
      ? sql`to_char(${sql.ref(field)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
      : sql`${sql.ref(field)}::text`;
  const row = await sql<{ id: string; v: string | null }>`
    select id, ${value} as v from ${sql.table(table)} where team_id = ${scope.accountId} and mode = 'live' and ${where}
    order by ${sql.ref(field)} ${dir}, id ${dir} offset ${position} limit 1`.execute(s.db);
  const r = row.rows[0]!;
  return encodeCursor(sort, r.v === null ? null : kind === 'number' ? Number(r.v) : r.v, r.id);
}

test('a deep page by -created_at is the same single index range scan as page 1', async () => {
  const first = await explainPage(customers, { limit: String(LIMIT) });
  assertKeysetScan(first, 'customers_created', 'page 1');
  const deep = await explainPage(customers, { limit: String(LIMIT), cursor: await cursorAt(customers, 'customers', '-created_at', 3000) });
  assertKeysetScan(deep, 'customers_created', 'page 151');
  const scan = deep[0]!.find((n) => n['Index Name'] === 'customers_created')!;
  assert.match(scan['Index Cond'], /ROW\(created_at, id\) < ROW\(/, 'the cursor is an index condition, not a filter');
  assert.equal(scan['Scan Direction'], 'Backward');
});

test("a deep page statement settles on one generic plan: the cursor is kept out of the planner's sight", async () => {
  // PostgreSQL plans a prepared statement at each call while its custom plans look cheaper than
  // the generic one; a cursor value the planner could see made them so (docs/performance.md).
  const plan = planList(
    customers,
    parseQuery({ limit: String(LIMIT), cursor: await cursorAt(customers, 'customers', '-created_at', 3000) }),
  );
  const statement = listStatement(s.db, customers, plan, scope, 0, LIMIT + 1)!;
  const args = sql.join(statement.parameters.map((v) => sql.lit(String(v))));
  const counts = await s.db.transaction().execute(async (trx) => {
    await trx.executeQuery(CompiledQuery.raw(`prepare deep_page as ${statement.sql}`));
    const pages: number[] = [];
    for (let call = 0; call < 8; call++) pages.push((await sql`execute deep_page(${args})`.execute(trx)).rows.length);
    const row = await sql<{ generic_plans: number | string; custom_plans: number | string }>`
      select generic_plans, custom_plans from pg_prepared_statements where name = 'deep_page'`.execute(trx);
    await sql`deallocate deep_page`.execute(trx);
    return { pages, generic: Number(row.rows[0]!.generic_plans), custom: Number(row.rows[0]!.custom_plans) };
  });
  assert.deepEqual(counts.pages, Array(8).fill(LIMIT + 1));
  assert.ok(counts.generic >= 3, `generic plans ${counts.generic}, custom ${counts.custom}`);
});

test('a nullable sort column paginates as index ranges on both sides of the NULL boundary', async () => {
  // Ascending from a non-null value: the rest of the values, then the NULLs.
  const asc = await explainPage(customers, {
    sort: 'updated_at',
    limit: String(LIMIT),
    cursor: await cursorAt(customers, 'customers', 'updated_at', 1990),
  });
  assert.equal(asc.length, 2);
  assertKeysetScan(asc, 'customers_updated', 'updated_at asc across the boundary');
  // Descending from inside the NULLs: the rest of the NULLs, then the values.
  const desc = await explainPage(customers, {
    sort: '-updated_at',
    limit: String(LIMIT),
    cursor: await cursorAt(customers, 'customers', '-updated_at', 1000),
  });
  assert.equal(desc.length, 2);
  assertKeysetScan(desc, 'customers_updated', 'updated_at desc from a null');
});

test('sales pages use the partial keyset indexes (only sale and order) for every sort', async () => {
  assertKeysetScan(await explainPage(sales, { limit: String(LIMIT) }), 'transactions_created', 'sales page 1');
  const byTotal = await explainPage(sales, {
    sort: '-total_amount',
    limit: String(LIMIT),
    cursor: await cursorAt(sales, 'transactions', '-total_amount', 2500, sql`transaction_type in ('sale', 'order')`),
  });
  assertKeysetScan(byTotal, 'transactions_total', 'sales by -total_amount deep');
  const fromNull = await explainPage(sales, {
    sort: '-total_amount',
    limit: String(LIMIT),
    cursor: await cursorAt(sales, 'transactions', '-total_amount', 500, sql`transaction_type in ('sale', 'order')`),
  });
  assertKeysetScan(fromNull, 'transactions_total', 'sales by -total_amount from a null');
});
