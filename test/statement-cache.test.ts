// The statement cache must send exactly what building the query anew sends: for every resource and
// a spread of shapes (projections, sorts, every filter operator, cursors on NOT NULL and nullable
// columns), the cached statement of a second request, with other values, equals a fresh compile.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { compileGet, compileInclude, compileList, getStatement, includeStatement, listStatement } from '../src/query/compile.ts';
import { encodeCursor } from '../src/query/cursor.ts';
import { parseQuery } from '../src/query/parse.ts';
import { planList } from '../src/query/plan.ts';
import { customers } from '../src/resources/descriptors/customers.ts';
import type { ResourceDescriptor } from '../src/resources/descriptor.ts';
import { expenses } from '../src/resources/descriptors/expenses.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { sales } from '../src/resources/descriptors/sales.ts';
import { sharedStatementCache, statementCache } from '../src/infra/db/statements/statement-cache.ts';
import { constantSql, insertStatement, insertsStatement } from '../src/resources/engines/insert-statement.ts';
import { numberedSaleInsert, numberOf } from '../src/resources/writes/transaction-number.ts';
import { originShape } from '../src/events/write-origin.ts';
import { TAIL_STATEMENT, tailStatementShape } from '../src/resources/engines/write-engine.ts';
import { IdempotencyStore } from '../src/infra/idempotency-store.ts';
import { placeholder } from '../src/infra/db/statements/send-ahead.ts';
import { builtShape, compiledShape } from '../src/infra/db/statements/sql-shape.ts';
import { logEntryShape } from '../src/resources/engines/request-log.ts';

const dialect = {
  createAdapter: () => new PostgresAdapter(),
  createDriver: () => new DummyDriver(),
  createIntrospector: (k: Kysely<any>) => new PostgresIntrospector(k),
  createQueryCompiler: () => new PostgresQueryCompiler(),
};
const ID_A = '0f8fad5b-d9cb-469f-a165-70867728950e';
const ID_B = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const tenants = [
  { accountId: '11111111-1111-4111-8111-111111111111', mode: 'live' },
  { accountId: '22222222-2222-4222-8222-222222222222', mode: 'test' },
] as const;

const plain = (c: { sql: string; parameters: readonly unknown[] }) => ({ sql: c.sql, parameters: [...c.parameters] });

/** Asserts, for each tenant in turn (the first fills the cache), that every segment matches a fresh build. */
function assertListMatches(db: Kysely<any>, d: ResourceDescriptor, queries: Record<string, string>[]) {
  for (const [i, scope] of tenants.entries()) {
    const plan = planList(d, parseQuery(queries[i] ?? queries[0]));
    const fresh = compileList(db, d, plan, scope).map((q, segment) => plain(q.limit(sql.lit(7 - segment)).compile()));
    const cached = fresh.map((_, segment) => plain(listStatement(db, d, plan, scope, segment, 7 - segment)!));
    assert.deepEqual(cached, fresh, `${d.name} ${JSON.stringify(queries[i] ?? queries[0])}`);
    assert.equal(listStatement(db, d, plan, scope, fresh.length, 7), undefined);
  }
}

describe('statement cache', () => {
  const db = new Kysely<any>({ dialect });

  test('first pages of every resource, whole and projected', () => {
    for (const d of RESOURCES) {
      assertListMatches(db, d, [{}]);
      assertListMatches(db, d, [{ fields: 'id' }, { fields: 'id' }]);
      assertListMatches(db, d, [{ limit: '5' }, { limit: '9' }]);
    }
  });

  test("a write's origin statement, with its log entry, key record and settled number: one template per shape", () => {
    const fresh = new Kysely<any>({ dialect });
    const store = new IdempotencyStore(db);
    const shapeFor = (i: number) => {
      const scope = tenants[i]!;
      const id = [ID_A, ID_B][i]!;
      const number = placeholder(numberOf(scope, id));
      const written = { descriptor: sales, tenant: scope, id } as never;
      const entry = {
        apiKeyId: ID_B,
        requestId: `req-${i}`,
        method: 'POST',
        path: '/v1/sales',
        status: 201,
        idempotencyKey: `k${i}`,
      } as const;
      const claim = { apiKeyId: ID_A, key: `k${i}`, token: ID_B, signature: `sig-${i}` };
      const besides = [
        { shape: logEntryShape(written, entry) },
        {
          shape: store.recordShape(
            claim,
            claim.signature,
            { status: 201, body: `{"n":"${number.token}"}`, contentType: 'application/json' },
            [number],
          ),
        },
      ];
      return tailStatementShape(originShape(`{"key_id":"${ID_A}","request_id":"req-${i}"}`, besides));
    };
    for (const i of [0, 1]) {
      const shape = shapeFor(i);
      const built = plain(builtShape(shape).compile(fresh));
      assert.deepEqual(plain(compiledShape(db, TAIL_STATEMENT, shape)), built);
      assert.ok(built.parameters.includes(tenants[i]!.accountId) && built.parameters.includes(`req-${i}`));
    }
    // Every value is a parameter, so the shape has one template: nothing is built again per write.
    assert.equal(sharedStatementCache(db).cachedShapes(TAIL_STATEMENT), 1);
  });

  test('the row limit is written into the text (one text per limit), never sent as a parameter', () => {
    const fresh = new Kysely<any>({ dialect });
    const plan = planList(customers, parseQuery({}));
    const [a, b, again] = [21, 101, 21].map((rows) => listStatement(fresh, customers, plan, tenants[0]!, 0, rows)!);
    assert.match(a!.sql, / limit 21$/);
    assert.match(b!.sql, / limit 101$/);
    assert.deepEqual(a!.parameters, [tenants[0]!.accountId, tenants[0]!.mode]);
    assert.deepEqual(plain(again!), plain(a!));
    assert.equal(statementCache(fresh).cachedShapes(customers), 2);
  });

  test('every filter operator, with values differing between the two requests', () => {
    const pairs: [Record<string, string>, Record<string, string>][] = [
      [{ 'filter[full_name][ilike]': 'Ana%' }, { 'filter[full_name][ilike]': 'Bia_%' }],
      [{ 'filter[is_active][eq]': 'true' }, { 'filter[is_active][eq]': 'false' }],
      [{ 'filter[email][neq]': 'a@b.c' }, { 'filter[email][neq]': 'x@y.z' }],
      [{ 'filter[email][in]': 'a@b.c,d@e.f' }, { 'filter[email][in]': 'x@y.z,u@v.w' }],
      [{ 'filter[email][nin]': 'a@b.c' }, { 'filter[email][nin]': 'x@y.z' }],
      [{ 'filter[email][is_null]': 'true' }, { 'filter[email][is_null]': 'true' }],
    ];
    for (const [a, b] of pairs) assertListMatches(db, customers, [a, b]);
    assertListMatches(db, sales, [{ 'filter[total_amount][gt]': '10' }, { 'filter[total_amount][gt]': '99.5' }]);
    assertListMatches(db, sales, [{ 'filter[customer_id][eq]': ID_A }, { 'filter[customer_id][eq]': ID_B }]);
  });

  test('a different number of in-list values, or is_null true against false, is another shape', () => {
    assertListMatches(db, customers, [{ 'filter[email][in]': 'a@b.c' }, { 'filter[email][in]': 'a@b.c,d@e.f,g@h.i' }]);
    assertListMatches(db, customers, [{ 'filter[email][is_null]': 'true' }, { 'filter[email][is_null]': 'false' }]);
  });

  test('each shape is cached once; timestamp filters are built anew each time, and still match', () => {
    const fresh = new Kysely<any>({ dialect });
    assertListMatches(fresh, customers, [{ fields: 'id' }, { fields: 'id' }]);
    assertListMatches(fresh, customers, [{ 'filter[full_name][ilike]': 'A%' }, { 'filter[full_name][ilike]': 'B%' }]);
    assert.equal(statementCache(fresh).cachedShapes(customers), 2);
    assertListMatches(fresh, customers, [
      { 'filter[created_at][gte]': '2026-01-01T00:00:00.000Z' },
      { 'filter[created_at][gte]': '2026-02-01T00:00:00.000Z' },
    ]);
    assert.equal(statementCache(fresh).cachedShapes(customers), 2);
    assertListMatches(db, customers, [
      { 'filter[created_at][gte]': '2026-01-01T00:00:00.000Z' },
      { 'filter[created_at][gte]': '2026-02-01T00:00:00.000Z' },
    ]);
  });

  test('cursors: NOT NULL and nullable sort columns, both directions, a null position', () => {
    const c = (sort: string, value: string | null, id: string) => ({ sort, cursor: encodeCursor(sort, value, id) });
    assertListMatches(db, customers, [
      c('-created_at', '2026-01-01T10:00:00.123456Z', ID_A),
      c('-created_at', '2025-03-01T10:00:00.000001Z', ID_B),
    ]);
    assertListMatches(db, customers, [c('full_name', 'Ana', ID_A), c('full_name', 'Zé', ID_B)]);
    for (const sort of ['due_date', '-due_date']) {
      assertListMatches(db, expenses, [c(sort, '2026-01-05', ID_A), c(sort, '2026-03-05', ID_B)]);
      assertListMatches(db, expenses, [c(sort, null, ID_A), c(sort, null, ID_B)]);
    }
  });

  test('get by id and includes', () => {
    for (const [i, scope] of tenants.entries()) {
      const id = i === 0 ? ID_A : ID_B;
      const fields = ['id', 'status', 'total_amount'];
      assert.deepEqual(
        plain(getStatement(db, sales, fields, id, scope, [])),
        plain(compileGet(db, sales, fields, id, scope, []).compile()),
      );
      for (const inc of [sales.includes!.items!, expenses.includes!.recurring!]) {
        const parent = { id, [inc.foreignKey]: id };
        assert.deepEqual(plain(includeStatement(db, inc, parent, scope)), plain(compileInclude(db, inc, parent, scope).compile()));
      }
    }
  });

  test('a handle with plugins is never served cached text (a plugin may rewrite every query)', () => {
    let seen = 0;
    const withPlugin = db.withPlugin({
      transformQuery: ({ node }) => {
        seen += 1;
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const plan = planList(customers, parseQuery({}));
    listStatement(withPlugin, customers, plan, tenants[0]!, 0, 3);
    listStatement(withPlugin, customers, plan, tenants[1]!, 0, 3);
    assert.equal(seen, 2);
  });

  test("a sale's numbered insert, cached for every transaction's handle, equals a fresh build", () => {
    // A handle with a plugin is never served cached text: it builds the statement anew each time.
    const fresh = db.withPlugin({ transformQuery: ({ node }) => node, transformResult: async ({ result }) => result });
    for (const [i, scope] of tenants.entries()) {
      const tenant = scope as Parameters<typeof numberedSaleInsert>[1];
      const sale = {
        id: [ID_A, ID_B][i] as string,
        transaction_type: 'sale',
        status: `status ${i}`,
        created_at: '2026-11-26T10:00:00.000Z',
      };
      const followUps = {
        history: { transaction_id: sale.id, old_status: null, new_status: sale.status, change_reason: null, created_at: sale.created_at },
        items: { columns: ['id', 'notes'], rows: [{ id: `item of ${i}`, notes: `note ${i}` }] },
      };
      for (const returningAll of [false, true]) {
        const built = plain(numberedSaleInsert(fresh, tenant, sale, returningAll, followUps));
        assert.deepEqual(plain(numberedSaleInsert(db, tenant, sale, returningAll, followUps)), built);
        assert.ok(
          built.parameters.includes(scope.accountId) && built.parameters.includes(sale.id) && built.parameters.includes(sale.status),
        );
        assert.ok(
          built.parameters.some((p) => typeof p === 'string' && p.includes(`note ${i}`)),
          'the items go as one JSON parameter',
        );
      }
      // With the origin's mark as the statement's tail (its CTEs and answer columns).
      const tail = originShape(`{"key_id":null,"request_id":"req-${i}"}`, []);
      const built = plain(numberedSaleInsert(fresh, tenant, sale, false, followUps, true, tail));
      assert.deepEqual(plain(numberedSaleInsert(db, tenant, sale, false, followUps, true, tail)), built);
      assert.ok(built.parameters.includes(`{"key_id":null,"request_id":"req-${i}"}`));
      assert.match(
        built.sql,
        /"origin" as \(SELECT balcao_mark_origin\(.* select "transaction_number", \(SELECT count\(\*\) FROM origin\) as "recorded"/s,
      );
    }
  });

  test('inserts: cached per table, columns and constant fragments; equal to a fresh build with other values', () => {
    const fresh = db.withPlugin({ transformQuery: ({ node }) => node, transformResult: async ({ result }) => result });
    const now = constantSql(sql`now()`);
    const later = constantSql(sql`now() + cast(${1} as integer) * interval '1 microsecond'`);
    const rowsOf = (i: number) => [
      { id: [ID_A, ID_B][i], quantity: String(i + 1), notes: i ? null : 'n', created_at: now },
      { id: [ID_B, ID_A][i], quantity: String(i + 7), notes: 'm', created_at: later },
    ];
    for (const [i, scope] of tenants.entries()) {
      for (const returning of [true, false]) {
        const built = plain(insertStatement(fresh, 'transaction_items', scope, rowsOf(i), returning));
        assert.deepEqual(plain(insertStatement(db, 'transaction_items', scope, rowsOf(i), returning)), built);
        assert.equal(built.parameters.filter((p) => p === scope.accountId).length, 2, 'every row carries the tenant');
      }
    }
    // Several tables in one statement (a sale's history entry, then its items): the same, per table.
    for (const [i, scope] of tenants.entries()) {
      const inserts = [
        { table: 'transaction_status_history', rows: [{ transaction_id: ID_A, new_status: `s${i}`, created_at: now }] },
        { table: 'transaction_items', rows: rowsOf(i) },
      ];
      const built = plain(insertsStatement(fresh, scope, inserts, false));
      assert.deepEqual(plain(insertsStatement(db, scope, inserts, false)), built);
      assert.equal(built.parameters.filter((p) => p === scope.accountId).length, 3, 'every row of every table carries the tenant');
      assert.ok(built.parameters.includes(`s${i}`));
    }
    // A fragment made per call (it carries a request's value) is never part of a cached shape.
    for (const value of ['{"a":1}', '{"b":2}']) {
      const rows = [{ id: ID_A, data: sql`cast(${value} as jsonb)` }];
      const built = plain(insertStatement(fresh, 'events', tenants[0]!, rows, true));
      assert.deepEqual(plain(insertStatement(db, 'events', tenants[0]!, rows, true)), built);
      assert.ok(built.parameters.includes(value));
    }
  });
});
