// What the query stages (parse → plan → compile) need to know about a resource: its table, row
// schema, filters, sorts, fixed conditions and includes. resources/descriptor.ts extends it, so the
// query layer never imports from resources/.
import type { TObject } from '@sinclair/typebox';

export const FILTER_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'ilike', 'is_null'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A child collection or related object returned with `include=<name>` on GET by id and on the list. */
export interface IncludeDescriptor {
  /** Table holding the related rows (same tenant columns as the parent). */
  table: string;
  /** 'many': child rows whose `foreignKey` equals the parent id, ordered by `orderBy` then id.
   *  'one': the row whose id equals the parent's `foreignKey` column, or null. */
  cardinality: 'many' | 'one';
  foreignKey: string;
  orderBy?: string;
  /** Response schema of one related row. */
  item: TObject;
}

export interface QueryableResource {
  /** URL segment after /v1/ (`bank-accounts`). */
  name: string;
  /** Table in the database. */
  table: string;
  /** Response schema of one record: every field of SPEC part 2, nothing internal. */
  row: TObject;
  /** Filterable fields and the operators each allows. */
  filters: Readonly<Record<string, readonly FilterOperator[]>>;
  /** Sortable fields (created_at and updated_at on every resource). */
  sorts: readonly string[];
  /** Fixed conditions every query adds besides the tenant (column → allowed values, or null for IS NULL). */
  where?: Readonly<Record<string, readonly string[] | null>>;
  includes?: Readonly<Record<string, IncludeDescriptor>>;
}

export const ALL_OPERATORS: readonly FilterOperator[] = FILTER_OPERATORS;

/** `ilike` is a text pattern match; on other kinds it is refused as an operator not allowed. */
export const NON_TEXT_OPERATORS: readonly FilterOperator[] = FILTER_OPERATORS.filter((op) => op !== 'ilike');

/** The range operators every list takes on `id` and `updated_at` (issue 49), so a copy can be walked by either. */
export const RANGE_OPERATORS: readonly FilterOperator[] = ['gt', 'gte', 'lt', 'lte'];
/** Fields every list filters by range whatever its own table says: `id` (UUID order) and `updated_at`. */
export const SYNC_RANGE_FIELDS = ['id', 'updated_at'] as const;

/**
 * The filter table of a resource from its row schema: every listed field gets the ten operators
 * when it is text and all but `ilike` otherwise; `restrict` narrows chosen fields (deals). `id` and
 * `updated_at` always take the range operators besides, for walking a copy in sync.
 */
export function filtersFor(
  row: TObject,
  fields: readonly string[],
  restrict: Readonly<Record<string, readonly FilterOperator[]>> = {},
): Readonly<Record<string, readonly FilterOperator[]>> {
  const out: Record<string, readonly FilterOperator[]> = {};
  for (const field of fields) {
    const schema = row.properties[field];
    if (!schema) throw new Error(`filter field ${field} is not in the row schema`);
    out[field] = restrict[field] ?? (schema['x-balcao-type'] === 'text' ? ALL_OPERATORS : NON_TEXT_OPERATORS);
  }
  for (const field of SYNC_RANGE_FIELDS) {
    if (!row.properties[field]) continue;
    const ops = new Set([...(out[field] ?? []), ...RANGE_OPERATORS]);
    out[field] = FILTER_OPERATORS.filter((op) => ops.has(op));
  }
  return Object.freeze(out);
}
