// Compiled SQL of list plans, snapshot-style (SQL text + parameters), with no database: tenant
// first, fixed conditions as literals, every operator, and the keyset segments of a cursor.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { compileGet, compileInclude, compileList } from '../src/query/compile.ts';
import { encodeCursor } from '../src/query/cursor.ts';
import { parseQuery } from '../src/query/parse.ts';
import { planList } from '../src/query/plan.ts';
import { customers } from '../src/resources/descriptors/customers.ts';
import type { ResourceDescriptor } from '../src/resources/descriptor.ts';
import { expenses } from '../src/resources/descriptors/expenses.ts';
import { products } from '../src/resources/descriptors/products.ts';
import { sales } from '../src/resources/descriptors/sales.ts';

const db = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
const scope = { accountId: 'team', mode: 'live' } as const;
const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

function compiled(d: ResourceDescriptor, query: Record<string, string>) {
  return compileList(db, d, planList(d, parseQuery(query)), scope).map((q) => {
    const c = q.limit(3).compile();
    return { sql: c.sql, parameters: [...c.parameters] };
  });
}

/** The WHERE clause of a single-segment query, and its parameters after the tenant's. */
function where(d: ResourceDescriptor, query: Record<string, string>) {
  const [one] = compiled(d, query);
  const m = /where (.*) order by/.exec(one!.sql);
  return { sql: m?.[1], parameters: one!.parameters.slice(2, -1) };
}

describe('compiled list queries', () => {
  test('first page: tenant, projection, index order, limit — and nothing else', () => {
    assert.deepEqual(compiled(customers, { fields: 'full_name' }), [
      {
        sql:
          'select "id", "full_name", "created_at", to_char("created_at" at time zone \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\') as "__cursor_value" ' +
          'from "customers" where "team_id" = $1 and "mode" = $2 order by "created_at" desc, "id" desc limit $3',
        parameters: ['team', 'live', 3],
      },
    ]);
  });

  test('fixed conditions are literals, matching the partial index predicates', () => {
    const [s] = compiled(sales, { sort: 'total_amount', fields: 'status' });
    assert.equal(
      s!.sql,
      'select "id", "status", "total_amount" from "transactions" where "team_id" = $1 and "mode" = $2 and "transaction_type" in (\'sale\', \'order\') ' +
        'order by "total_amount" asc, "id" asc limit $3',
    );
    assert.match(compiled(products, {})[0]!.sql, /and "deleted_at" is null order by/);
  });

  test('every operator, values as text parameters cast to the column type', () => {
    const cases: [Record<string, string>, string, unknown[]][] = [
      [{ 'filter[status][eq]': 'paid' }, '"status" = cast($3::text as text)', ['paid']],
      [{ 'filter[total_amount][gt]': '10' }, '"total_amount" > cast($3::text as numeric)', ['10']],
      [{ 'filter[total_amount][lte]': '10' }, '"total_amount" <= cast($3::text as numeric)', ['10']],
      [{ 'filter[customer_id][neq]': ID }, '("customer_id" is null or not "customer_id" = cast($3::text as uuid))', [ID]],
      [{ 'filter[status][in]': 'a,b' }, '"status" in (cast($3::text as text), cast($4::text as text))', ['a', 'b']],
      [{ 'filter[status][nin]': 'a' }, '("status" is null or not "status" in (cast($3::text as text)))', ['a']],
      [{ 'filter[status][ilike]': 'pa%' }, '"status" ilike $3', ['pa%']],
      [{ 'filter[status][is_null]': 'true' }, '"status" is null', []],
      [{ 'filter[is_active][is_null]': 'false' }, '"is_active" is not null', []],
      [{ 'filter[is_active][eq]': 'true' }, '"is_active" = cast($3::text as boolean)', ['true']],
      [
        { 'filter[sale_date][eq]': '2026-01-01T10:00:00.123Z' },
        '("sale_date" >= cast($3::text as timestamptz) and "sale_date" < cast($4::text as timestamptz))',
        ['2026-01-01T10:00:00.123Z', '2026-01-01T10:00:00.124Z'],
      ],
      [
        { 'filter[sale_date][gt]': '2026-01-01T10:00:00.123Z' },
        '"sale_date" >= cast($3::text as timestamptz)',
        ['2026-01-01T10:00:00.124Z'],
      ],
      [{ 'filter[sale_date][lte]': '2026-01-01' }, '"sale_date" < cast($3::text as timestamptz)', ['2026-01-01T00:00:00.001Z']],
    ];
    for (const [query, sql, parameters] of cases) {
      const w = where(sales, query);
      assert.equal(w.sql, `"team_id" = $1 and "mode" = $2 and "transaction_type" in ('sale', 'order') and ${sql}`, JSON.stringify(query));
      assert.deepEqual(w.parameters, parameters, JSON.stringify(query));
    }
    const both = where(sales, { 'filter[status][eq]': 'a', 'filter[total_amount][gte]': '1' });
    assert.match(both.sql!, /and "status" = cast\(\$3::text as text\) and "total_amount" >= cast\(\$4::text as numeric\)$/);
  });

  test('a cursor on a NOT NULL column is one row comparison in index order', () => {
    const cursor = encodeCursor('-created_at', '2026-01-01T10:00:00.123456Z', ID);
    const [one, ...rest] = compiled(customers, { fields: 'id', cursor });
    assert.equal(rest.length, 0);
    assert.match(
      one!.sql,
      /and \("created_at", "id"\) < \(\(select cast\(\$3::text as timestamptz\)\), \(select cast\(\$4::text as uuid\)\)\) order by "created_at" desc, "id" desc limit \$5$/,
    );
    assert.deepEqual(one!.parameters, ['team', 'live', '2026-01-01T10:00:00.123456Z', ID, 3]);
  });

  test('a cursor on a nullable column continues in up to two index ranges, in PostgreSQL NULL order', () => {
    const seg = (sort: string, value: string | number | null) =>
      compiled(expenses, { sort, fields: 'id', cursor: encodeCursor(sort, value, ID) }).map((c) =>
        c.sql.replace(/^.* where "team_id" = \$1 and "mode" = \$2 and /, ''),
      );
    assert.deepEqual(seg('due_date', '2026-01-05'), [
      '("due_date", "id") > ((select cast($3::text as date)), (select cast($4::text as uuid))) order by "due_date" asc, "id" asc limit $5',
      '"due_date" is null order by "due_date" asc, "id" asc limit $3',
    ]);
    assert.deepEqual(seg('due_date', null), [
      '"id" > (select cast($3::text as uuid)) and "due_date" is null order by "due_date" asc, "id" asc limit $4',
    ]);
    assert.deepEqual(seg('-due_date', null), [
      '"id" < (select cast($3::text as uuid)) and "due_date" is null order by "due_date" desc, "id" desc limit $4',
      '"due_date" is not null order by "due_date" desc, "id" desc limit $3',
    ]);
    assert.deepEqual(seg('-due_date', '2026-01-05'), [
      '("due_date", "id") < ((select cast($3::text as date)), (select cast($4::text as uuid))) order by "due_date" desc, "id" desc limit $5',
    ]);
  });
});

describe('compiled item queries', () => {
  test('get by id and includes stay in the tenant', () => {
    const get = compileGet(db, sales, ['id', 'status'], ID, scope, []).compile();
    assert.equal(
      get.sql,
      // The version (ETag) is read with the record, whatever the fields asked for.
      'select "id", "status", to_char("updated_at" at time zone \'UTC\', \'YYYYMMDDHH24MISSUS\') as "__version" from "transactions" where "team_id" = $1 and "mode" = $2 and "transaction_type" in (\'sale\', \'order\') and "id" = $3',
    );
    const items = compileInclude(db, sales.includes!.items!, { id: ID }, scope).compile();
    assert.match(
      items.sql,
      /from "transaction_items" where "team_id" = \$1 and "mode" = \$2 and "transaction_id" = \$3 order by "created_at" asc, "id" asc$/,
    );
    const recurring = compileInclude(db, expenses.includes!.recurring!, { id: ID, recurring_expense_id: 'r' }, scope).compile();
    assert.match(recurring.sql, /from "recurring_expenses" where "team_id" = \$1 and "mode" = \$2 and "id" = \$3 limit 1$/);
    assert.deepEqual([...recurring.parameters], ['team', 'live', 'r']);
  });
});
