// What each resource key of an import file (DECISIONS C) maps to: its table, the nested arrays
// stored in child tables, the values the API would fill in, and the few rules the data model
// states beyond column types (enums, e-mails, pix keys). Column types come from the database.
import type { TObject, TSchema } from '@sinclair/typebox';
import { generateExpenseNumber } from '../domain/numbering.ts';
import { CreateExpenseInput } from '../resources/writes/expenses.ts';
import { CreateSaleInput, SaleItemInput } from '../resources/writes/sales.ts';

export const IMPORT_RESOURCE_NAMES = [
  'customers',
  'sales',
  'suppliers',
  'expenses',
  'recurring_expenses',
  'appointments',
  'services',
  'products',
  'inventory',
  'bank_accounts',
  'deals',
  'deal_stages',
] as const;

export type ImportResourceName = (typeof IMPORT_RESOURCE_NAMES)[number];

export interface ChildTable {
  table: string;
  /** Column holding the parent's id. */
  parentKey: string;
}

export interface ImportResource {
  table: string;
  /** Nested arrays of a record stored in their own table (`sales[].items`). */
  children?: Readonly<Record<string, ChildTable>>;
  /** Required columns the API fills in on create, filled the same way when the file leaves them out. */
  defaults?: Readonly<Record<string, () => unknown>>;
}

export const IMPORT_RESOURCES: Readonly<Record<ImportResourceName, ImportResource>> = {
  customers: { table: 'customers' },
  sales: {
    table: 'transactions',
    children: {
      items: { table: 'transaction_items', parentKey: 'transaction_id' },
      status_history: { table: 'transaction_status_history', parentKey: 'transaction_id' },
    },
    defaults: { transaction_type: () => 'sale' },
  },
  suppliers: { table: 'suppliers' },
  expenses: { table: 'expenses', defaults: { expense_number: () => generateExpenseNumber() } },
  recurring_expenses: { table: 'recurring_expenses' },
  appointments: { table: 'appointments' },
  services: { table: 'services' },
  products: { table: 'catalog_items' },
  inventory: { table: 'inventory_items' },
  bank_accounts: { table: 'bank_accounts' },
  deals: { table: 'deals' },
  deal_stages: { table: 'deal_stages' },
};

/** Every table the import writes, parents before children. */
export const IMPORT_TABLES: readonly string[] = Object.values(IMPORT_RESOURCES).flatMap((r) => [
  r.table,
  ...Object.values(r.children ?? {}).map((c) => c.table),
]);

/** Tenant columns: set from the command line, never from the file. */
export const TENANT_COLUMNS = ['team_id', 'mode'] as const;

/** A rule returns the reason a (non-null, well-typed) value is refused, or nothing. */
export type ValueRule = (value: unknown) => string | undefined;

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const email: ValueRule = (v) => (EMAIL.test(v as string) ? undefined : 'must be an e-mail address');
const oneOf =
  (...values: string[]): ValueRule =>
  (v) =>
    values.includes(v as string) ? undefined : `must be one of ${values.join(', ')}`;

/** SPEC 2.4: pix_keys is an array of `{type, key}` strings (the allowed types are not fixed). */
const pixKeys: ValueRule = (v) => {
  if (!Array.isArray(v)) return 'must be an array of {type, key} objects';
  for (const [i, entry] of v.entries()) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return `[${i}] must be an object with type and key`;
    const keys = Object.keys(entry);
    const extra = keys.filter((k) => k !== 'type' && k !== 'key');
    if (extra.length > 0) return `[${i}] has unknown field(s): ${extra.join(', ')}`;
    const { type, key } = entry as { type?: unknown; key?: unknown };
    if (typeof type !== 'string' || type === '') return `[${i}].type must be a non-empty string`;
    if (typeof key !== 'string' || key === '') return `[${i}].key must be a non-empty string`;
  }
  return undefined;
};

/** The numeric bounds a write schema states (SPEC part 2's `>= 0`, `> 0`, `0..100`, `>= 1`), as
 *  rules: imported records obey the same ranges the API promises, taken from the one schema. */
function boundsOf(schema: TObject): Record<string, ValueRule> {
  const rules: Record<string, ValueRule> = {};
  for (const [field, property] of Object.entries(schema.properties)) {
    const numeric = [property, ...((property as TSchema).anyOf ?? [])].find((s: TSchema) => s.type === 'number' || s.type === 'integer');
    if (!numeric) continue;
    const { minimum, exclusiveMinimum, maximum } = numeric as { minimum?: number; exclusiveMinimum?: number; maximum?: number };
    if (minimum === undefined && exclusiveMinimum === undefined && maximum === undefined) continue;
    rules[field] = (v) => {
      const n = v as number;
      if (minimum !== undefined && n < minimum) return `must be at least ${minimum}`;
      if (exclusiveMinimum !== undefined && n <= exclusiveMinimum) return `must be greater than ${exclusiveMinimum}`;
      if (maximum !== undefined && n > maximum) return `must be at most ${maximum}`;
      return undefined;
    };
  }
  return rules;
}

/** Rules per table and column, beyond what the column type says. */
export const COLUMN_RULES: Readonly<Record<string, Readonly<Record<string, ValueRule>>>> = {
  customers: { email },
  suppliers: { email, pix_keys: pixKeys },
  transaction_items: { ...boundsOf(SaleItemInput), catalog_type: oneOf('product', 'service', 'package') },
  transactions: { ...boundsOf(CreateSaleInput), transaction_type: (v) => ((v as string).trim() === '' ? 'must not be empty' : undefined) },
  expenses: boundsOf(CreateExpenseInput),
};
