// Inventory items (SPEC 2.9): row schema, filters and sorts of /v1/inventory.
import { Type } from '@sinclair/typebox';
import { F } from '../../schemas/common.ts';
import { filtersFor } from '../../query/contract.ts';
import type { ResourceDescriptor } from '../descriptor.ts';

export const inventoryRow = Type.Object(
  {
    id: F.uuid(),
    name: F.text(),
    description: F.textOrNull(),
    unit: F.textOrNull({ examples: ['un'] }),
    current_stock: F.numberOrNull(),
    min_stock_alert: F.numberOrNull(),
    ean_code: F.textOrNull(),
    catalog_item_id: F.uuidOrNull(),
    is_in_catalog: F.booleanOrNull(),
    is_active: F.booleanOrNull(),
    created_at: F.timestampOrNull(),
    updated_at: F.timestampOrNull(),
  },
  { title: 'InventoryItem' },
);

export const inventory: ResourceDescriptor = {
  name: 'inventory',
  table: 'inventory_items',
  module: 'estoque',
  row: inventoryRow,
  filters: filtersFor(inventoryRow, ['name', 'is_active', 'catalog_item_id']),
  sorts: ['created_at', 'updated_at', 'name'],
};
