// Products (SPEC 2.8): catalog items; soft-deleted ones (deleted_at set) never appear.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const productRow = Type.Object(
  {
    id: F.uuid(),
    name: F.text(),
    description: F.textOrNull(),
    unit: F.text({ examples: ['un'] }),
    selling_price: F.number(),
    cost_price: F.number(),
    is_variable_price: F.booleanOrNull(),
    min_price: F.numberOrNull(),
    max_price: F.numberOrNull(),
    ean_code: F.textOrNull(),
    internal_code: F.textOrNull(),
    category_id: F.uuidOrNull(),
    subcategory_id: F.uuidOrNull(),
    current_stock: F.numberOrNull(),
    min_stock_alert: F.numberOrNull(),
    manages_stock: F.booleanOrNull(),
    is_in_catalog: F.booleanOrNull(),
    allows_appointments: F.booleanOrNull(),
    is_active: F.booleanOrNull(),
    image_url: F.textOrNull(),
    created_at: F.timestampOrNull(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'Product' },
);

export const products: ResourceDescriptor = {
  name: 'products',
  table: 'catalog_items',
  module: 'catalogo',
  row: productRow,
  filters: filtersFor(productRow, ['name', 'is_active', 'category_id', 'ean_code', 'is_in_catalog']),
  sorts: ['created_at', 'updated_at', 'name'],
  // Spelled as the partial keyset indexes' predicate so the planner can use them.
  where: { deleted_at: null },
};
