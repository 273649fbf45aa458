// Writes of /v1/sales (SPEC 2.2, 3; DECISIONS B.4–B.6): totals computed in exact decimals from
// the items (any totals in the body are dropped), the per-tenant transaction_number, the items
// and the first status-history entry in the sale's transaction; PATCH limited to six fields,
// appending history on a status change and recomputing the total on a delivery_fee change.
import { randomUUID } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import { type Dec, dec, money, quantity, toSqlNumeric } from '../../domain/money.ts';
import { type SaleFigures, saleFigures, saleTotal } from '../../domain/sale-totals.ts';
import type { FieldError } from '../../errors/app-error.ts';
import type { Body, CreationPlan, CreationPlanner, Row, WriteContext, WriteDescriptor } from '../descriptor.ts';
import { type SqlBool, sql } from 'kysely';
import { insertScopedFromRows, selectScoped } from '../../infra/db/tenancy/tenancy.ts';
import { insertStatement } from '../engines/insert-statement.ts';
import { printedTimestamp } from '../../infra/db/engine/timestamp-text.ts';
import {
  lockedCounter,
  NUMBER_IN_STATEMENT,
  numberedSaleInsert,
  numberOf,
  type SaleFollowUps,
  SaleNumbering,
} from './transaction-number.ts';
import { TEXT_BOUNDS } from '../../schemas/bounds.ts';
import { MAX_MONEY, MAX_QUANTITY, optional, partialOf, W } from './fields.ts';
import { externalIdInput } from '../engines/external-id.ts';

const MAX = TEXT_BOUNDS.transactions;

export const CATALOG_TYPES = ['product', 'service', 'package'] as const;
export const SALE_TYPES = ['sale', 'order'] as const;
export const MAX_ITEMS = 200;

export const SaleItemInput = Type.Object(
  {
    catalog_type: W.enum(CATALOG_TYPES),
    catalog_item_id: W.uuid({ description: 'Checked as a UUID only.' }),
    quantity: W.quantity({ description: '> 0; up to 3 decimal places are kept.', examples: [3] }),
    unit_price: W.money({ examples: [19.99] }),
    ...optional({
      discount_amount: W.moneyOrNull(),
      discount_percentage: W.percentageOrNull(),
      notes: W.textOrNull({ maxLength: TEXT_BOUNDS.transaction_items.notes }),
    }),
  },
  { title: 'CreateTransactionItemInput' },
);

const patchable = {
  status: W.text({ minLength: 1, maxLength: MAX.status, examples: ['completed'] }),
  payment_status: W.textOrNull({ maxLength: MAX.payment_status, examples: ['paid'] }),
  payment_method: W.textOrNull({ maxLength: MAX.payment_method, examples: ['pix'] }),
  notes: W.textOrNull({ maxLength: MAX.notes }),
  delivery_date: W.dateOrNull(),
  delivery_fee: W.moneyOrNull({ description: 'Changing it recomputes total_amount.' }),
  external_id: externalIdInput(),
};

export const CreateSaleInput = Type.Object(
  {
    items: Type.Array(SaleItemInput, { minItems: 1, maxItems: MAX_ITEMS }),
    ...optional({
      ...patchable,
      status: W.text({ minLength: 1, maxLength: MAX.status, default: 'pending', examples: ['pending'] }),
      customer_id: W.uuidOrNull({ description: 'A customer of the account.' }),
      transaction_type: W.enum(SALE_TYPES, { default: 'sale' }),
      sale_date: W.timestamp({ description: 'Defaults to now.' }),
      order_code: W.textOrNull({ maxLength: MAX.order_code, description: 'Free use by the integration.' }),
    }),
  },
  { title: 'CreateSaleInput' },
);

export const UpdateSaleInput = partialOf(patchable, { title: 'UpdateSaleInput' });

export type CreateSale = Static<typeof CreateSaleInput>;
type ItemInput = Static<typeof SaleItemInput>;

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A quantity is kept to 3 places (B.5): one that rounds to 0 would break `quantity > 0`. */
function quantitiesAfterRounding(body: Body): FieldError[] {
  const items = body.items;
  if (!Array.isArray(items) || items.length > MAX_ITEMS) return [];
  return items.flatMap((item, i) =>
    // From a thousandth up, nothing rounds to zero: the decimal check is for the rare smaller quantity.
    item && isNumber(item.quantity) && item.quantity > 0 && item.quantity < 0.001 && quantity(item.quantity).isZero()
      ? [{ field: `items[${i}].quantity`, code: 'too_small', message: 'A quantidade deve ser maior que zero (até 3 casas decimais).' }]
      : [],
  );
}

/** The amounts of a validated body, computed once and used for both the sale's row and its items. */
const computedAmounts = new WeakMap<Body, SaleFigures>();

/** The tenants whose sale counter this process has seen (transaction-number.ts). */
const numbering = new SaleNumbering();

/** Amounts over what the columns hold (numeric(14, 2)) are refused, not truncated or failed. */
function amountLimits(body: Body): FieldError[] {
  const items = body.items;
  if (!Array.isArray(items) || items.length === 0 || items.length > MAX_ITEMS) return [];
  // Items whose own fields are out of bounds were refused by the schema already: no second blame.
  const inBounds = (i: ItemInput | undefined) =>
    i && isNumber(i.quantity) && isNumber(i.unit_price) && i.quantity <= MAX_QUANTITY && i.unit_price <= MAX_MONEY;
  if (!items.every(inBounds)) return [];
  const fee = isNumber(body.delivery_fee) ? body.delivery_fee : null;
  const clean = items.map((i) => ({
    quantity: i.quantity,
    unit_price: i.unit_price,
    discount_amount: isNumber(i.discount_amount) ? i.discount_amount : null,
    discount_percentage: isNumber(i.discount_percentage) ? i.discount_percentage : null,
  }));
  const amounts = saleFigures(clean, fee);
  // The same amounts as the valid body's: the creation uses them, not computed twice.
  computedAmounts.set(body, amounts);
  // Exact comparisons: amounts are rounded to cents, and a double holds every cent amount up to the limit.
  const limit = MAX_MONEY;
  const out: FieldError[] = amounts.items.flatMap((a, i) =>
    a.subtotal > limit
      ? [{ field: `items[${i}].quantity`, code: 'too_big', message: 'Quantidade × preço unitário excede o valor máximo permitido.' }]
      : [],
  );
  if (out.length === 0 && (amounts.subtotal > limit || amounts.total_amount > limit)) {
    out.push({ field: 'items', code: 'too_big', message: 'O total da venda excede o valor máximo permitido.' });
  }
  return out;
}

const numeric = (value: Dec | null) => (value === null ? null : toSqlNumeric(value));

/** A numeric column's text from an amount of `saleFigures`: its shortest text is the exact decimal. */
const numericText = (value: number | null) => (value === null ? null : String(value));

function amountsOf(body: Body): SaleFigures {
  let amounts = computedAmounts.get(body);
  if (!amounts) {
    const input = body as CreateSale;
    amounts = saleFigures(input.items, input.delivery_fee);
    computedAmounts.set(body, amounts);
  }
  return amounts;
}

const number = (value: unknown) => (value == null ? null : Number(value));

/**
 * Item `i` of a sale created at `saleCreatedAt` (an ISO text to the millisecond): `i` microseconds later, bound
 * as text, so reads keep the body's order (created_at, then id), and all of them print as the sale's millisecond.
 */
const itemCreatedAt = (saleCreatedAt: string, i: number): string => `${saleCreatedAt.slice(0, 23)}${String(i).padStart(3, '0')}Z`;

function toInsert(_ctx: WriteContext, body: Body): Row {
  const input = body as CreateSale;
  const amounts = amountsOf(body);
  // From this process's clock, not the database's `now()`: the answer, its stored copy and its event are made
  // before the database answers, so a creation is one round trip (docs/decisions.md). Already as the API prints it.
  const createdAt = new Date().toISOString();
  return {
    customer_id: input.customer_id ?? null,
    transaction_type: input.transaction_type ?? 'sale',
    status: input.status ?? 'pending',
    sale_date: input.sale_date ?? createdAt,
    delivery_date: input.delivery_date ?? null,
    subtotal: numericText(amounts.subtotal),
    discount_amount: numericText(amounts.discount_amount),
    discount_percentage: null,
    tax_amount: null,
    total_amount: numericText(amounts.total_amount),
    notes: input.notes ?? null,
    payment_method: input.payment_method ?? null,
    payment_status: input.payment_status ?? null,
    delivery_fee: numericText(amounts.delivery_fee),
    order_code: input.order_code ?? null,
    external_id: input.external_id ?? null,
    is_active: true,
    created_at: createdAt,
  };
}

/** The sale as the API answers it, from the values inserted; undefined for a sale_date the database must print. */
function answeredFromValues(values: Row): Row | undefined {
  const saleDate = printedTimestamp(String(values.sale_date));
  if (saleDate === undefined) return undefined;
  return {
    ...values,
    sale_date: saleDate,
    subtotal: number(values.subtotal),
    discount_amount: number(values.discount_amount),
    discount_percentage: number(values.discount_percentage),
    tax_amount: number(values.tax_amount),
    total_amount: number(values.total_amount),
    delivery_fee: number(values.delivery_fee),
    updated_at: null,
  };
}

/** A status-history entry; at creation it carries the sale's own time, later the database's `now()`. */
function historyRow(transactionId: unknown, oldStatus: unknown, newStatus: unknown, createdAt?: string): Row {
  return {
    transaction_id: transactionId,
    old_status: oldStatus ?? null,
    new_status: newStatus,
    change_reason: null,
    created_at: createdAt,
  };
}

/** What a new sale writes besides its row, and its items as the API answers them, in the body's order. */
function followUpsOf(sale: Row, body: Body): { followUps: SaleFollowUps; items: Row[] } {
  const input = body as CreateSale;
  const amounts = amountsOf(body);
  const createdAt = String(sale.created_at);
  const rows: Row[] = [];
  const answered: Row[] = [];
  input.items.forEach((item: ItemInput, i) => {
    const a = amounts.items[i] as (typeof amounts.items)[number];
    const row = {
      id: randomUUID(),
      transaction_id: sale.id,
      catalog_type: item.catalog_type,
      catalog_item_id: item.catalog_item_id,
      quantity: numericText(a.quantity),
      unit_price: numericText(a.unit_price),
      discount_amount: numericText(a.discount_amount),
      discount_percentage: numericText(a.discount_percentage),
      subtotal: numericText(a.subtotal),
      total_amount: numericText(a.total_amount),
      notes: item.notes ?? null,
      created_at: itemCreatedAt(createdAt, i),
    };
    rows.push(row);
    answered.push({
      ...row,
      quantity: a.quantity,
      unit_price: a.unit_price,
      discount_amount: a.discount_amount,
      discount_percentage: a.discount_percentage,
      subtotal: a.subtotal,
      total_amount: a.total_amount,
      created_at: createdAt,
    });
  });
  return {
    followUps: {
      // Only the final state of a creation is recorded (SPEC part 3): one entry, old_status null.
      history: historyRow(sale.id, null, sale.status, createdAt),
      items: { columns: Object.keys(rows[0] as Row), rows },
    },
    items: answered,
  };
}

/** The six PATCH fields; a delivery_fee change recomputes total_amount from the stored items. */
async function toUpdate(ctx: WriteContext, body: Body, current: Row): Promise<Row> {
  const values: Row = { ...body };
  if ('delivery_fee' in body) {
    const fee = body.delivery_fee == null ? null : money(body.delivery_fee as number);
    const items = await selectScoped(ctx.trx, 'transaction_items', ctx.tenant)
      .select('total_amount')
      .where('transaction_id', '=', current.id)
      .execute();
    values.delivery_fee = numeric(fee);
    values.total_amount = numeric(
      saleTotal(
        items.map((i) => dec(String(i.total_amount))),
        fee,
      ),
    );
  }
  return values;
}

/** Every status change (PATCH or DELETE's cancellation) appends one entry; none when unchanged. The same rule for a
 *  change made in one statement is `changeFollowUp`, below. */
async function afterChange(ctx: WriteContext, before: Row, after: Row): Promise<void> {
  // Nothing reads the entry back: it goes out with the commit (a failure still fails the change).
  // Dated by the sale's new version, not the transaction's start: versions of one sale strictly increase in the order
  // its changes commit, so the history (ordered by created_at) is the chain of changes even when they raced.
  if (after.status !== before.status && after.status != null)
    await ctx.tx.sendAhead(
      insertStatement(
        ctx.trx,
        'transaction_status_history',
        ctx.tenant,
        [historyRow(after.id, before.status, after.status, String(after.updated_at))],
        false,
      ),
    );
}

/**
 * A new sale's plan: its counter row locked, then one INSERT that takes its number and writes its items and first
 * history entry (transaction-number.ts). Its answer is made from its own values (but its number, settled by the
 * INSERT), so nothing is awaited before the commit, and the INSERT carries the write's tail: all its statements and
 * its COMMIT travel in one round trip, on the tenant's write lane.
 */
const salePlanner: CreationPlanner = {
  onLane: true,
  plan(ctx, values, body): CreationPlan {
    const { followUps, items } = followUpsOf(values, body);
    const counterKnown = numbering.counterKnown(ctx.tenant, ctx.mayAssume);
    const answer = answeredFromValues(values);
    const insert = (tail?: Parameters<typeof numberedSaleInsert>[6]) =>
      numberedSaleInsert(ctx.trx, ctx.tenant, values, !answer, followUps, counterKnown, tail);
    const common = {
      before: lockedCounter(ctx.trx, ctx.tenant),
      ...(counterKnown ? { meaning: numbering.meaning(ctx.tenant) } : {}),
      included: { items },
    };
    // A sale_date the database must print: the answer is read from the INSERT's row.
    if (!answer) return { ...common, main: () => insert() };
    return {
      ...common,
      main: () => insert(),
      answered: { row: answer, settled: { transaction_number: numberOf(ctx.tenant, String(values.id)) } },
      carriesTail: { main: (tail) => insert(tail), settledInStatement: { transaction_number: NUMBER_IN_STATEMENT } },
    };
  },
};

export const saleWrite: WriteDescriptor = {
  create: CreateSaleInput,
  update: UpdateSaleInput,
  softDelete: { status: 'cancelled' },
  deleteSummary: 'Cancel a sale',
  references: { customer_id: 'customers' },
  createIncludes: ['items'],
  rules: {
    check: (body, current) => (current ? [] : [...quantitiesAfterRounding(body), ...amountLimits(body)]),
    toInsert,
    planCreation: salePlanner,
    toUpdate,
    afterChange,
    // A delivery fee's new total reads the stored items; anything else follows from the body.
    unreadUpdate: (body) => ('delivery_fee' in body ? undefined : { ...body }),
    changeFollowUp: {
      before: ['status'],
      sql: (db, tenant) =>
        insertScopedFromRows(
          db,
          'transaction_status_history',
          tenant,
          // Dated by the new version, as afterChange does: the order of the changes' commits.
          { transaction_id: sql`id`, old_status: sql`before_status`, new_status: sql`status`, created_at: sql`updated_at` },
          'changed',
          sql<SqlBool>`status IS DISTINCT FROM before_status AND status IS NOT NULL`,
        ),
    },
  },
};
