// Sales (SPEC 2.2): transactions of type sale or order; other types (quotes) are never served.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';
import { externalIdField } from '../engines/external-id.ts';
import { saleWrite } from '../writes/sales.ts';

export const saleRow = Type.Object(
  {
    id: F.uuid(),
    customer_id: F.uuidOrNull(),
    transaction_type: F.text({ description: '`sale` or `order`', examples: ['sale'] }),
    transaction_number: F.textOrNull({ description: 'Sequential number per account' }),
    status: F.textOrNull({ examples: ['pending'] }),
    sale_date: F.timestampOrNull(),
    delivery_date: F.dateOrNull(),
    subtotal: F.numberOrNull({ description: 'Sum of item subtotals, before discounts' }),
    discount_amount: F.numberOrNull(),
    discount_percentage: F.numberOrNull(),
    tax_amount: F.numberOrNull(),
    total_amount: F.numberOrNull({ description: 'Sum of item totals plus delivery_fee' }),
    notes: F.textOrNull(),
    payment_method: F.textOrNull({ examples: ['pix'] }),
    payment_status: F.textOrNull({ examples: ['pending'] }),
    delivery_fee: F.numberOrNull(),
    order_code: F.textOrNull({ description: 'Free use by the integration' }),
    is_active: F.booleanOrNull(),
    external_id: externalIdField(),
    created_at: F.timestamp(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Sale' },
);

export const transactionItemRow = Type.Object(
  {
    id: F.uuid(),
    catalog_type: F.text({ description: '`product`, `service` or `package`', examples: ['product'] }),
    catalog_item_id: F.uuid(),
    quantity: F.number(),
    unit_price: F.number(),
    discount_amount: F.numberOrNull(),
    discount_percentage: F.numberOrNull(),
    subtotal: F.number({ description: 'quantity x unit_price, before discounts' }),
    total_amount: F.number({ description: 'After discounts' }),
    notes: F.textOrNull(),
    created_at: F.timestamp(),
  },
  { title: 'TransactionItem' },
);

export const transactionStatusHistoryRow = Type.Object(
  {
    id: F.uuid(),
    old_status: F.textOrNull({ description: 'null on creation' }),
    new_status: F.text(),
    change_reason: F.textOrNull(),
    created_at: F.timestamp(),
  },
  { title: 'TransactionStatusHistory' },
);

export const sales: ResourceDescriptor = {
  name: 'sales',
  table: 'transactions',
  import: {
    children: {
      items: { table: 'transaction_items', parentKey: 'transaction_id', checked: ['catalog_type'] },
      status_history: { table: 'transaction_status_history', parentKey: 'transaction_id' },
    },
    defaults: { transaction_type: () => 'sale' },
    checked: ['external_id'],
    // Any transaction_type may be imported (quotes included, DECISIONS C), but not an empty one.
    rules: { transaction_type: (v) => ((v as string).trim() === '' ? 'must not be empty' : undefined) },
  },
  module: 'vendas',
  row: saleRow,
  filters: filtersFor(
    saleRow,
    [
      'external_id',
      'customer_id',
      'status',
      'transaction_type',
      'transaction_number',
      'payment_status',
      'payment_method',
      'sale_date',
      'total_amount',
      'is_active',
      'created_at',
      'updated_at',
    ],
    { external_id: ['eq', 'in'] },
  ),
  sorts: ['created_at', 'updated_at', 'sale_date', 'total_amount'],
  write: saleWrite,
  // Spelled as the partial keyset indexes' predicate so the planner can use them.
  where: { transaction_type: ['sale', 'order'] },
  includes: {
    items: {
      table: 'transaction_items',
      cardinality: 'many',
      foreignKey: 'transaction_id',
      orderBy: 'created_at',
      item: transactionItemRow,
    },
    status_history: {
      table: 'transaction_status_history',
      cardinality: 'many',
      foreignKey: 'transaction_id',
      orderBy: 'created_at',
      item: transactionStatusHistoryRow,
    },
  },
};
