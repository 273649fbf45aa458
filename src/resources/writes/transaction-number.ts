// The statements of the per-tenant `transaction_number` of a new sale: the rule and the format of a number are
// domain/numbering.ts'; here they are SQL, kept in tenant_counters and read and written through the tenancy helper
// like every other account-owned statement, and taken in the sale's own INSERT.
import { type Compilable, type CompiledQuery, type QueryCreator, type RawBuilder, sql } from 'kysely';
import { COUNTED_NUMBER_PATTERN, TRANSACTION_COUNTER } from '../../domain/numbering.ts';
import { boundTenant, type Tenant, tenantKey, tenantValues } from '../../domain/tenant.ts';
import { unlessNoneProve } from '../../infra/db/statements/belief-check.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import {
  conditionScopedSql,
  insertScoped,
  insertScopedFromJson,
  rowsAsJson,
  sameScopeSql,
  selectScoped,
  TENANT_COLUMNS,
  tenantValuesAs,
  updateScoped,
} from '../../infra/db/tenancy/tenancy.ts';
import type { Row } from '../../infra/db/engine/row.ts';
import { ShapeKeys, sharedStatementCache } from '../../infra/db/statements/statement-cache.ts';
import type { Shaped, SqlShape } from '../../infra/db/statements/sql-shape.ts';
import type { StatementTail } from '../descriptor.ts';
import { AccountBeliefs } from '../engines/account-beliefs.ts';

/**
 * A new sale's INSERT that takes its number in the same statement, whatever the counter's state: the counter
 * moves on and the row is written once, with its number (an UPDATE after the insert would write every index
 * of `transactions` a second time). The counter row stays locked until the transaction ends, so concurrent
 * creations get consecutive numbers and a rolled-back sale gives its number back; a creation sends all its
 * statements and its COMMIT in one round trip, so the lock is held while the server runs them, not across a
 * wait for Node. The rule's two rare cases (domain/numbering.ts) are settled in the same statement:
 * - a taken next number: the counter jumps past the largest stored number;
 * - the tenant's first sale (no counter: `bumped` updated nothing) creates the counter; a concurrent first
 *   sale conflicts on the key, waits for this one, then takes the next value.
 * The largest stored number is a scan of the tenant's sales, so it sits where only those cases reach it
 * (a CASE branch, and a row that exists only when no counter did: PostgreSQL runs such a sub-select only
 * then). The counter is bumped by an UPDATE and created by an INSERT … SELECT, and the sale is inserted by an
 * INSERT … SELECT from the counter's value, not with sub-selects in VALUES or ON CONFLICT, which Citus
 * refuses (docs/scale-out.md). Each value is cast to its column's type, which a SELECT list needs.
 * `values` are the sale's columns but the tenant's and the number (plain values, all of SALE_COLUMN_TYPES);
 * it answers the row's `transaction_number`, or the whole row with `returningAll`. The sale's first history entry
 * and its items are inserted by the same statement: one statement fewer per sale, whose set-up and messages
 * cost both sides (docs/performance.md).
 */
export function numberedSaleInsert(
  trx: Db,
  tenant: Tenant,
  values: Row,
  returningAll: boolean,
  followUps: SaleFollowUps,
  counterKnown = false,
  tail?: Shaped<StatementTail>,
): CompiledQuery {
  const columns = definedColumns(values);
  const historyColumns = definedColumns(followUps.history);
  const { columns: itemColumns, rows } = followUps.items;
  const itemsAsValues = rows.length > 0 && rows.length <= MAX_ITEMS_AS_VALUES;
  const shapeKey = shapeKeys.of(
    `${counterKnown ? 'known:' : ''}${returningAll ? '*' : ''}${itemsAsValues ? rows.length : 'json'}`,
    columns,
    historyColumns,
    itemColumns,
  );
  const key = tail ? `${shapeKey}|${tail.key}` : shapeKey;
  // Plain loops: this runs for every sale, with about 150 values.
  const bound: unknown[] = tenantValues(tenant);
  for (const c of columns) bound.push(values[c]);
  for (const c of historyColumns) bound.push(followUps.history[c]);
  if (itemsAsValues) for (const row of rows) for (const c of itemColumns) bound.push(row[c]);
  else bound.push(rowsAsJson(rows));
  const tailAt = bound.length;
  if (tail) for (const value of tail.values) bound.push(value);
  // One shape per column lists (and count of items sent as values): built once, then only bound (src/infra/db/statements/statement-cache.ts).
  return sharedStatementCache(trx).statement(NUMBERED_INSERT, key, 0, bound, (b) => {
    const scope = boundTenant(b);
    const sale = b.slice(2, 2 + columns.length);
    const history = Object.fromEntries(historyColumns.map((c, i) => [c, b[2 + columns.length + i]]));
    const boundItems = b.slice(2 + columns.length + historyColumns.length, tailAt);
    const itemRows = itemsAsValues
      ? rows.map((_, r) => Object.fromEntries(itemColumns.map((c, i) => [c, boundItems[r * itemColumns.length + i]])))
      : undefined;
    return [
      buildNumberedInsert(
        trx,
        scope,
        columns,
        sale,
        returningAll,
        { history, itemColumns, itemRows, itemsJson: boundItems[0] },
        counterKnown,
        tail?.build(b.slice(tailAt)),
      ),
    ];
  })!;
}

/** The sale's number as the CTEs its insert carries (a tail: the sale's event) read it: the `sale` CTE's answer. */
export const NUMBER_IN_STATEMENT: SqlShape<string> = {
  key: 'sale number in statement',
  values: [],
  build: () => sql<string>`(SELECT transaction_number FROM sale)`,
};

const definedColumns = (row: Row): string[] => {
  const columns: string[] = [];
  for (const column in row) if (row[column] !== undefined) columns.push(column);
  return columns;
};

const shapeKeys = new ShapeKeys();

/**
 * The statement sent ahead of a new sale's INSERT: the tenant's sale counter row, locked. A concurrent sale then waits
 * here, on a statement of one index scan, and not inside the INSERT: when an UPDATE finds its row changed by a
 * transaction it waited for, PostgreSQL re-checks the row (EvalPlanQual) after initializing every part of the
 * statement's plan again, the sale, its items and history included; that was 5 % of PostgreSQL's CPU per sale with
 * sales of one account arriving together (docs/performance.md). No row (the tenant's first sale): nothing is locked,
 * and the INSERT creates the counter as before.
 */
export function lockedCounter(trx: Db, tenant: Tenant): CompiledQuery {
  return sharedStatementCache(trx).statement(COUNTER_LOCK, '', 0, tenantValues(tenant), (b) => [
    selectScoped(trx, 'tenant_counters', boundTenant(b))
      .select(sql<number>`1`.as('locked'))
      .where('name', '=', TRANSACTION_COUNTER)
      .forUpdate(),
  ])!;
}

const COUNTER_LOCK = { statement: 'sale counter lock' };

/** What a new sale writes besides its row, in the same statement: its first history entry and its items. */
export interface SaleFollowUps {
  history: Row;
  /** Every row has `columns` (as parameters, or as JSON in one: MAX_ITEMS_AS_VALUES). */
  items: { columns: readonly string[]; rows: readonly Row[] };
}

const NUMBERED_INSERT = { statement: 'numbered sale insert' };

/**
 * Up to this many items are a VALUES list of parameters, one statement shape per count; more are one JSON
 * parameter (`json_populate_recordset`), one shape for any count. Ten items as values cost PostgreSQL 25 µs
 * less than as JSON (parsing the text and a hash table per row), and the driver a little more for the
 * parameters it binds: the work moves from the database, which every instance shares, to the instance
 * (docs/performance.md). The bound keeps the statements each connection prepares few.
 */
export const MAX_ITEMS_AS_VALUES = 20;

/** The SQL type of each column a new sale's INSERT names (its SELECT list casts every value). */
const SALE_COLUMN_TYPES: Readonly<Record<string, string>> = {
  id: 'uuid',
  customer_id: 'uuid',
  transaction_type: 'text',
  status: 'text',
  sale_date: 'timestamptz',
  delivery_date: 'date',
  subtotal: 'numeric',
  discount_amount: 'numeric',
  discount_percentage: 'numeric',
  tax_amount: 'numeric',
  total_amount: 'numeric',
  notes: 'text',
  payment_method: 'text',
  payment_status: 'text',
  delivery_fee: 'numeric',
  order_code: 'text',
  external_id: 'text',
  is_active: 'boolean',
  created_at: 'timestamptz',
};

function buildNumberedInsert(
  trx: Db,
  tenant: Tenant,
  columns: readonly string[],
  bound: readonly unknown[],
  returningAll: boolean,
  followUps: { history: Row; itemColumns: readonly string[]; itemRows: Row[] | undefined; itemsJson: unknown },
  counterKnown: boolean,
  tail: StatementTail | undefined,
) {
  const selected = columns.map((column, i) => {
    const type = SALE_COLUMN_TYPES[column];
    if (!type) throw new Error(`numberedSaleInsert: no SQL type for the column ${column}`);
    return sql`cast(${bound[i]} as ${sql.raw(type)})`.as(column);
  });
  const withFollowUps = (counterKnown ? withNextNumberOfKnownCounter(trx, tenant) : (withNextNumber(trx, tenant) as unknown as NextNumber))
    .with('sale', (db) => {
      const insert = db
        .insertInto('transactions')
        .columns([...TENANT_COLUMNS, ...columns, 'transaction_number'] as never)
        .expression((from) =>
          from
            .selectFrom('next')
            .select([...tenantValuesAs(tenant), ...selected, sql<string>`cast("next"."value" as text)`.as('transaction_number')]),
        );
      return returningAll ? insert.returningAll() : insert.returning('transaction_number');
    })
    // The follow-ups come after the sale: Citus runs a statement's CTEs one by one, in order, and their
    // foreign keys need the sale's row; PostgreSQL checks them at the statement's end.
    .with('history', (db) => insertScoped(db, 'transaction_status_history', tenant, followUps.history))
    .with('items', (db) =>
      followUps.itemRows
        ? insertScoped(db, 'transaction_items', tenant, followUps.itemRows)
        : insertScopedFromJson(db, 'transaction_items', tenant, followUps.itemColumns, followUps.itemsJson),
    );
  if (!tail) return withFollowUps.selectFrom('sale').selectAll();
  // A tail's CTEs (the sale's event) come last, after the rows they may read (the `sale` CTE's answer). Their names
  // and rows are the tail's own: the chain is untyped from here.
  let withTail = withFollowUps as unknown as CteChain;
  // Kysely parenthesizes the CTEs it builds, not raw ones.
  for (const [name, cte] of tail.ctes) withTail = withTail.with(name, () => sql`(${cte})`);
  return withTail.selectFrom('sale').select(['transaction_number', ...tail.columns]);
}

/** What this module needs of a query creator to add CTEs it names at run time. */
interface CteChain {
  with(name: string, cte: () => RawBuilder<unknown>): CteChain;
  selectFrom(table: 'sale'): { select(selections: readonly unknown[]): Compilable };
}

/** The tenant's next sale number, as the CTE `next` (one row, `value`), the counter moved on and locked. */
function withNextNumber(trx: Db, tenant: Tenant) {
  const largestStored = selectScoped(trx, 'transactions', tenant)
    .select(sql`coalesce(max(transaction_number::numeric), 0) + 1`.as('next'))
    .where(sql<boolean>`transaction_number ~ ${sql.lit(COUNTED_NUMBER_PATTERN)}`);
  const afterLargestStored = () => sql<number>`(${largestStored})`;
  // In the UPDATE the scan is tied to the counter row, which makes it a SubPlan that runs only when its
  // CASE branch is taken. An uncorrelated one is an InitPlan, and PostgreSQL computes every InitPlan of
  // an UPDATE when it re-checks a row a concurrent transaction changed (EvalPlanQual): with sales
  // arriving together that was every sale, and a scan of all the tenant's sales each (docs/performance.md).
  const afterLargestStoredForCounter = sql<number>`(${largestStored.where(sameScopeSql('transactions', 'tenant_counters', 'account'))})`;
  const nextTaken = nextNumberTaken(trx, tenant);
  return trx
    .with('bumped', (db) =>
      bumpedCounter(
        db,
        tenant,
        sql`case when exists (${nextTaken})
            then greatest(tenant_counters.value + 1, ${afterLargestStoredForCounter}) else tenant_counters.value + 1 end`,
      ),
    )
    .with('created', (db) =>
      db
        .insertInto('tenant_counters')
        .columns([...TENANT_COLUMNS, 'name', 'value'])
        .expression(
          db
            .selectNoFrom([
              ...tenantValuesAs(tenant),
              sql`cast(${TRANSACTION_COUNTER} as text)`.as('name'),
              afterLargestStored().as('value'),
            ])
            .where(sql<boolean>`not exists (select 1 from bumped)`),
        )
        .onConflict((oc) => oc.columns([...TENANT_COLUMNS, 'name']).doUpdateSet({ value: sql`tenant_counters.value + 1` }))
        .returning('value'),
    )
    .with('next', (db) => db.selectFrom('bumped').select('value').unionAll(db.selectFrom('created').select('value')));
}

/**
 * `next` for a tenant whose counter this process has seen (`SaleNumbering`): the counter moved on by one, and
 * nothing else. The rare paths of `withNextNumber` (creating the counter, jumping past a number an import stored)
 * are left out, with their plan's set-up: about 12 µs of PostgreSQL's CPU per sale (docs/performance.md). When
 * either is needed after all (no counter row, or its next number taken), `bumped` updates nothing and `next`
 * divides by zero: the write fails whole, and runs again with `withNextNumber` (`SaleNumbering.meaning`).
 */
function withNextNumberOfKnownCounter(trx: Db, tenant: Tenant) {
  const nextTaken = nextNumberTaken(trx, tenant);
  return trx
    .with('bumped', (db) => bumpedCounter(db, tenant, sql`tenant_counters.value + 1`).where(sql<boolean>`not exists (${nextTaken})`))
    .with('next', (db) =>
      db.selectFrom('bumped').select(sql<number>`coalesce(max("value"), ${unlessNoneProve(sql`count(*)`)})`.as('value')),
    );
}

/** The CTE `bumped` of both ways to the next number: the tenant's sale counter set to `value`, which it answers. */
function bumpedCounter(db: QueryCreator<any>, tenant: Tenant, value: RawBuilder<unknown>) {
  return updateScoped(db, 'tenant_counters', tenant).set({ value }).where('name', '=', TRANSACTION_COUNTER).returning('value');
}

/** The sale already stored under the counter's next number (an import's), if any: read in the counter's UPDATE. */
function nextNumberTaken(trx: Db, tenant: Tenant) {
  return selectScoped(trx, 'transactions', tenant)
    .select(sql`1`.as('taken'))
    .where('transaction_number', '=', sql<string>`cast(tenant_counters.value + 1 as text)`);
}

/** Both ways to the next number, as the sale's INSERT reads them: the CTE `next`. */
type NextNumber = ReturnType<typeof withNextNumberOfKnownCounter>;

/**
 * Which tenants' sale counters this process has seen: their next sales take the statement without the rare
 * paths. A tenant is remembered from its first sale's statement on, even before it commits: should that sale
 * roll back and leave no counter, or an import take the next number, the next sale fails once and runs again.
 */
export class SaleNumbering {
  private readonly known = new AccountBeliefs('the sale counter is not as this process knew it');

  /** Whether the sale's statement may assume the counter (the write can run again when it may not). */
  counterKnown(tenant: Tenant, mayAssume: boolean): boolean {
    const key = tenantKey(tenant);
    if (mayAssume && this.known.holds(key)) return true;
    this.known.hold(key);
    return false;
  }

  /** What a failure of the statement that assumed the counter means: the write runs again, in full. */
  meaning(tenant: Tenant): (err: unknown) => unknown {
    return this.known.meaning(tenantKey(tenant));
  }
}

/** The sale's number as a later statement of the numbering transaction reads it: a shape (sql-shape.ts), built
 *  once into the statements of every sale that store a copy of it (its event and its stored response). */
export function numberOf(tenant: Tenant, saleId: string): SqlShape<string> {
  return { key: 'sale number', values: [...tenantValues(tenant), saleId], build: numberOfSql };
}

const numberOfSql = (values: readonly unknown[]) =>
  sql<string>`(SELECT t.transaction_number FROM transactions AS t WHERE ${conditionScopedSql(boundTenant(values), 't')} AND t.id = cast(${values[2]} as uuid))`;
