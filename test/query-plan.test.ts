// Parse and plan of the list query language, with no database: what each raw query becomes and
// the DECISIONS B.9 token of every refusal.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError } from '../src/errors/app-error.ts';
import { decodeCursor, encodeCursor } from '../src/query/cursor.ts';
import { parseItemQuery, parseQuery } from '../src/query/parse.ts';
import { planItem, planList } from '../src/query/plan.ts';
import { parseScalar, parseTimestampMs } from '../src/query/values.ts';
import { customers } from '../src/resources/descriptors/customers.ts';
import { deals } from '../src/resources/descriptors/deals.ts';
import { expenses } from '../src/resources/descriptors/expenses.ts';
import { inventory } from '../src/resources/descriptors/inventory.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { sales } from '../src/resources/descriptors/sales.ts';

const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 422);
    return err.detail as string;
  }
  assert.fail('expected a refusal');
}

describe('parse', () => {
  test('raw keys become a syntactic query; filters keep their order', () => {
    const q = parseQuery({
      limit: '5',
      sort: '-total_amount',
      fields: 'status, total_amount,,',
      'filter[status][eq]': 'paid',
      'filter[total_amount][gte]': '10',
      utm: 'ignored',
    });
    assert.deepEqual(q, {
      limit: '5',
      sort: '-total_amount',
      fields: ['status', 'total_amount'],
      filters: [
        { field: 'status', op: 'eq', value: 'paid' },
        { field: 'total_amount', op: 'gte', value: '10' },
      ],
    });
  });

  test('repeated fields and include merge; empty sort, fields and cursor count as absent', () => {
    assert.deepEqual(parseQuery({ fields: ['a', 'b,c'], include: ['items', 'x'], sort: '', cursor: '' }), {
      fields: ['a', 'b', 'c'],
      include: ['items', 'x'],
      filters: [],
    });
    assert.deepEqual(parseItemQuery({ fields: 'a', include: 'items', limit: 'x', sort: 'nope' }), { fields: ['a'], include: ['items'] });
  });

  test('malformed and repeated parameters are refused with their token', () => {
    assert.equal(
      refusal(() => parseQuery({ limit: ['1', '2'] })),
      'invalid_limit',
    );
    assert.equal(
      refusal(() => parseQuery({ cursor: ['a', 'b'] })),
      'invalid_cursor',
    );
    assert.equal(
      refusal(() => parseQuery({ sort: ['a', 'b'] })),
      'sort_field_not_allowed:a,b',
    );
    assert.equal(
      refusal(() => parseQuery({ fields: { a: 1 } })),
      'fields_not_allowed:',
    );
    assert.equal(
      refusal(() => parseQuery({ filter: 'x' })),
      'filter_field_not_allowed:filter',
    );
    assert.equal(
      refusal(() => parseQuery({ filters: 'x' })),
      'filter_field_not_allowed:filters',
    );
    assert.equal(
      refusal(() => parseQuery({ 'filter[][eq]': 'x' })),
      'filter_field_not_allowed:',
    );
    assert.deepEqual(parseQuery({ 'filter[a]': 'x' }).filters, [{ field: 'a', op: '', value: 'x' }]);
    assert.deepEqual(parseQuery({ 'filter[a][eq][b]': 'x' }).filters, [{ field: 'a', op: 'eq[b]', value: 'x' }]);
    assert.deepEqual(parseQuery({ 'filter[a][eq]': ['x', 'y'] }).filters, [{ field: 'a', op: 'eq', value: null }]);
    assert.deepEqual(parseQuery(null), { filters: [] });
  });
});

describe('plan', () => {
  test('defaults: limit 20, sort -created_at, every field with id first, no cursor', () => {
    const plan = planList(customers, parseQuery({}));
    assert.equal(plan.limit, 20);
    assert.deepEqual(plan.sort, { token: '-created_at', field: 'created_at', desc: true, kind: 'timestamp', nullable: false });
    assert.equal(plan.fields[0], 'id');
    assert.deepEqual([...plan.fields].sort(), Object.keys(customers.row.properties).sort());
    assert.equal(plan.after, null);
  });

  test('limit clamps numbers and refuses anything else', () => {
    const limit = (raw: string) => planList(customers, parseQuery({ limit: raw })).limit;
    assert.deepEqual(['0', '-1', '1', '50', '100', '101', '1'.repeat(30)].map(limit), [1, 1, 1, 50, 100, 100, 100]);
    for (const bad of ['', 'abc', '1.5', '1e2', ' 5', '0x10'])
      assert.equal(
        refusal(() => limit(bad)),
        'invalid_limit',
        bad,
      );
  });

  test('fields keep schema order, always include id, and refuse unknown names', () => {
    assert.deepEqual(planList(customers, parseQuery({ fields: 'email,full_name' })).fields, ['id', 'full_name', 'email']);
    assert.equal(
      refusal(() => planList(customers, parseQuery({ fields: 'email,team_id' }))),
      'fields_not_allowed:team_id',
    );
    assert.deepEqual(planItem(sales, parseItemQuery({ include: 'status_history,nope,items' })).includes, ['items', 'status_history']);
    assert.deepEqual(planItem(customers, parseItemQuery({ include: 'items' })).includes, []);
  });

  test('filter values are typed by the field kind', () => {
    const filters = (query: Record<string, string>) => planList(sales, parseQuery(query)).filters;
    assert.deepEqual(filters({ 'filter[total_amount][in]': '1,2.50' }), [
      { field: 'total_amount', kind: 'number', op: 'in', values: ['1', '2.50'] },
    ]);
    assert.deepEqual(filters({ 'filter[customer_id][eq]': ID.toUpperCase() }), [
      { field: 'customer_id', kind: 'uuid', op: 'eq', value: ID },
    ]);
    assert.deepEqual(filters({ 'filter[is_active][is_null]': 'false' }), [
      { field: 'is_active', kind: 'boolean', op: 'is_null', value: false },
    ]);
    assert.deepEqual(filters({ 'filter[sale_date][gte]': '2026-01-02' }), [
      { field: 'sale_date', kind: 'timestamp', op: 'gte', value: Date.parse('2026-01-02T00:00:00Z') },
    ]);
    assert.deepEqual(filters({ 'filter[status][ilike]': '50%_a\\b' }), [
      { field: 'status', kind: 'text', op: 'ilike', value: '50%\\_a\\\\b' },
    ]);
  });

  test('refusals name the field, the operator or the value', () => {
    const detail = (d: typeof sales, query: Record<string, string>) => refusal(() => planList(d, parseQuery(query)));
    assert.equal(detail(sales, { 'filter[notes][eq]': 'x' }), 'filter_field_not_allowed:notes');
    assert.equal(detail(inventory, { 'filter[current_stock][lt]': '1' }), 'filter_field_not_allowed:current_stock');
    assert.equal(detail(sales, { 'filter[status][regex]': 'x' }), 'filter_operator_not_allowed:status:regex');
    assert.equal(detail(sales, { 'filter[status]': 'x' }), 'filter_operator_not_allowed:status:');
    assert.equal(detail(sales, { 'filter[created_at][ilike]': 'x' }), 'filter_operator_not_allowed:created_at:ilike');
    assert.equal(detail(deals, { 'filter[status][nin]': 'x' }), 'filter_operator_not_allowed:status:nin');
    assert.equal(detail(deals, { 'filter[stage_id][neq]': ID }), 'filter_operator_not_allowed:stage_id:neq');
    assert.equal(detail(sales, { 'filter[status][eq]': 'x\u0000' }), 'filter_value_invalid:status');
    assert.equal(detail(sales, { 'filter[total_amount][lt]': '1,5' }), 'filter_value_invalid:total_amount');
    assert.equal(detail(expenses, { 'filter[due_date][eq]': '2025-02-29' }), 'filter_value_invalid:due_date');
    assert.equal(detail(sales, { sort: 'status' }), 'sort_field_not_allowed:status');
    assert.equal(detail(sales, { sort: '--created_at' }), 'sort_field_not_allowed:-created_at');
  });

  test('every descriptor filters and sorts only fields of its row, with created_at and updated_at sortable', () => {
    for (const d of RESOURCES) {
      for (const field of [...Object.keys(d.filters), ...d.sorts]) assert.ok(field in d.row.properties, `${d.name}.${field}`);
      assert.ok(d.sorts.includes('created_at') && d.sorts.includes('updated_at'), d.name);
      for (const [field, ops] of Object.entries(d.filters)) {
        const text = d.row.properties[field]?.['x-balcao-type'] === 'text';
        // An external id is the integrator's key, compared exactly (eq, in): no pattern search.
        assert.equal(ops.includes('ilike'), text && d.name !== 'deals' && field !== 'external_id', `${d.name}.${field} ilike`);
      }
    }
    // Every list walks by id and updated_at ranges besides its own filters (issue 49).
    for (const d of RESOURCES)
      for (const field of ['id', 'updated_at'])
        for (const op of ['gt', 'gte', 'lt', 'lte']) assert.ok(d.filters[field]?.includes(op as never), `${d.name}.${field} ${op}`);
    assert.deepEqual(deals.filters, {
      status: ['eq', 'in'],
      stage_id: ['eq'],
      customer_id: ['eq'],
      id: ['gt', 'gte', 'lt', 'lte'],
      updated_at: ['gt', 'gte', 'lt', 'lte'],
    });
  });
});

describe('values and cursors', () => {
  test('scalars parse strictly by kind', () => {
    assert.equal(parseScalar('number', '-0.5'), '-0.5');
    assert.equal(parseScalar('number', '1e5'), null);
    assert.equal(parseScalar('integer', '7'), '7');
    assert.equal(parseScalar('integer', '7.0'), null);
    assert.equal(parseScalar('boolean', 'TRUE'), null);
    assert.equal(parseScalar('date', '2024-02-29'), '2024-02-29');
    assert.equal(parseScalar('date', '0000-01-01'), null);
    assert.equal(parseScalar('time', '23:59:59'), '23:59:59');
    assert.equal(parseScalar('time', '24:00:00'), null);
    assert.equal(parseScalar('uuid', 'g'.repeat(36)), null);
    assert.equal(parseTimestampMs('2026-01-01T10:00:00.123456Z'), Date.parse('2026-01-01T10:00:00.123Z'));
    assert.equal(parseTimestampMs('2026-01-01T10:00:00-0300'), Date.parse('2026-01-01T13:00:00Z'));
    assert.equal(parseTimestampMs('2026-01-01T10:00:00 03:00'), Date.parse('2026-01-01T07:00:00Z'));
    assert.equal(parseTimestampMs('2026-01-01T10:00'), Date.parse('2026-01-01T10:00:00Z'));
    assert.equal(parseTimestampMs('2026-01-01T10:60:00Z'), null);
    assert.equal(parseTimestampMs('tomorrow'), null);
  });

  test('a cursor round-trips under its own sort only', () => {
    const c = encodeCursor('-created_at', '2026-01-01T10:00:00.123456Z', ID);
    assert.match(c, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(decodeCursor(c, '-created_at', 'timestamp', false), { value: '2026-01-01T10:00:00.123456Z', id: ID });
    assert.equal(
      refusal(() => decodeCursor(c, 'created_at', 'timestamp', false)),
      'invalid_cursor',
    );
    const nullCursor = encodeCursor('total_amount', null, ID);
    assert.deepEqual(decodeCursor(nullCursor, 'total_amount', 'number', true), { value: null, id: ID });
    assert.equal(
      refusal(() => decodeCursor(nullCursor, 'total_amount', 'number', false)),
      'invalid_cursor',
    );
    assert.deepEqual(decodeCursor(encodeCursor('total_amount', 12.5, ID), 'total_amount', 'number', true), { value: '12.5', id: ID });
    assert.equal(
      refusal(() => decodeCursor(encodeCursor('total_amount', '12.5', ID), 'total_amount', 'number', true)),
      'invalid_cursor',
    );
    for (const bad of [
      '',
      '!!',
      'e30',
      Buffer.from('null').toString('base64url'),
      Buffer.from('{"sort":"-created_at"}').toString('base64url'),
    ]) {
      assert.equal(
        refusal(() => decodeCursor(bad, '-created_at', 'timestamp', false)),
        'invalid_cursor',
        bad,
      );
    }
  });
});
