// What each resource key of an import file maps to: its table, the nested arrays stored in child
// tables, the values the API would fill in, and the few rules beyond column types (e-mails, enums,
// pix keys, numeric bounds), taken from the write schemas. Column types come from the database.
import type { TObject, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { generateExpenseNumber } from '../domain/numbering.ts';
import { CreateCustomerInput } from '../resources/writes/customers.ts';
import { CreateExpenseInput } from '../resources/writes/expenses.ts';
import { CreateSaleInput, SaleItemInput } from '../resources/writes/sales.ts';
import { CreateSupplierInput } from '../resources/writes/suppliers.ts';
import { FORMATS } from '../schemas/formats.ts';

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
export { TENANT_COLUMNS } from '../infra/db/tenancy.ts';

/** A rule returns the reason a (non-null, well-typed) value is refused, or nothing. */
export type ValueRule = (value: unknown) => string | undefined;

// The write schemas' own rules for the fields an import checks beyond column types, compiled by
// one Ajv with the API's formats: an imported value is refused where the API would refuse it, for
// the same reason. Only these fields: rules about how the API *creates* a record (lengths, a
// supplier's name, phone when e-mail is null) are not imposed on history brought from elsewhere.
const ruleAjv = new Ajv({ allErrors: false, coerceTypes: false, strict: false, validateFormats: true });
for (const [name, check] of Object.entries(FORMATS)) ruleAjv.addFormat(name, check);

/** The first refusal of a field's schema, in the import's words. */
function reasonOf(error: ErrorObject | undefined): string {
  if (!error) return 'is not valid';
  const at = error.instancePath.replace(/\/(\d+)/g, '[$1]').replace(/\/([^/]+)/g, '.$1');
  const params = error.params as Record<string, unknown>;
  const reason = (() => {
    switch (error.keyword) {
      case 'format':
        return params.format === 'email' ? 'must be an e-mail address' : `must be a ${String(params.format)}`;
      case 'enum':
        return `must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
      case 'minimum':
        return `must be at least ${String(params.limit)}`;
      case 'exclusiveMinimum':
        return `must be greater than ${String(params.limit)}`;
      case 'maximum':
        return `must be at most ${String(params.limit)}`;
      case 'required':
        return `must have ${String(params.missingProperty)}`;
      default:
        return error.message ?? 'is not valid';
    }
  })();
  return at ? `${at} ${reason}` : reason;
}

/** Rules for `fields`, each the field's schema in `schema` (a write schema). */
function rulesFrom(schema: TObject, fields: readonly string[]): Record<string, ValueRule> {
  const rules: Record<string, ValueRule> = {};
  for (const field of fields) {
    const property = schema.properties[field];
    if (!property) throw new Error(`${String(schema.title)} has no field ${field}`);
    const validate = ruleAjv.compile(property);
    rules[field] = (value) => (validate(value) ? undefined : reasonOf(validate.errors?.[0]));
  }
  return rules;
}

/** The fields of a write schema with numeric bounds (SPEC part 2's `>= 0`, `> 0`, `0..100`, `>= 1`). */
function boundedFields(schema: TObject): string[] {
  return Object.entries(schema.properties)
    .filter(([, property]) =>
      [property, ...((property as TSchema).anyOf ?? [])].some(
        (s: TSchema) => s.minimum !== undefined || s.exclusiveMinimum !== undefined || s.maximum !== undefined,
      ),
    )
    .map(([field]) => field);
}

/** Rules per table and column, beyond what the column type says. */
export const COLUMN_RULES: Readonly<Record<string, Readonly<Record<string, ValueRule>>>> = {
  customers: rulesFrom(CreateCustomerInput, ['email']),
  suppliers: rulesFrom(CreateSupplierInput, ['email', 'pix_keys']),
  transaction_items: rulesFrom(SaleItemInput, [...boundedFields(SaleItemInput), 'catalog_type']),
  // Any transaction_type may be imported (quotes included, DECISIONS C), but not an empty one.
  transactions: {
    ...rulesFrom(CreateSaleInput, boundedFields(CreateSaleInput)),
    transaction_type: (v) => ((v as string).trim() === '' ? 'must not be empty' : undefined),
  },
  expenses: rulesFrom(CreateExpenseInput, boundedFields(CreateExpenseInput)),
};
