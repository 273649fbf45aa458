// Stage 2: a ParsedQuery checked against a resource descriptor → a typed plan. Every refusal of a
// field, operator, value, sort, projection or cursor happens here (tokens from refusals.ts).
import type { FilterOperator, QueryableResource } from './contract.ts';
import type { FieldKind } from '../schemas/common.ts';
import { type CursorPosition, decodeCursor } from './cursor.ts';
import type { ParsedQuery } from './parse.ts';
import { refuse } from './refusals.ts';
import { descriptorMeta } from './row-meta.ts';
import { parseScalar } from './values.ts';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
export const DEFAULT_SORT = '-created_at';
/** Bound on `in`/`nin` lists: keeps statements small whatever the client sends. */
export const MAX_LIST_VALUES = 100;

/** A parsed scalar: canonical text for the SQL cast, or epoch milliseconds for timestamps. */
export type Scalar = string | number;

export type FilterPlan =
  | { field: string; kind: FieldKind; op: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte'; value: Scalar }
  | { field: string; kind: FieldKind; op: 'ilike'; value: string }
  | { field: string; kind: FieldKind; op: 'in' | 'nin'; values: Scalar[] }
  | { field: string; kind: FieldKind; op: 'is_null'; value: boolean };

export interface SortPlan {
  /** As the client writes it (`-created_at`): also what a cursor is bound to. */
  token: string;
  field: string;
  desc: boolean;
  kind: FieldKind;
  nullable: boolean;
}

export interface ListPlan {
  limit: number;
  sort: SortPlan;
  /** Output fields, `id` first, in schema order. */
  fields: readonly string[];
  filters: FilterPlan[];
  /** The keyset position to continue after, or null on the first page. */
  after: CursorPosition | null;
}

export interface ItemPlan {
  fields: readonly string[];
  /** Requested includes the resource knows, in descriptor order. */
  includes: readonly string[];
}

export function planLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (!/^[-+]?\d+$/.test(raw)) throw refuse.limit();
  return Math.min(MAX_LIMIT, Math.max(1, Number(raw)));
}

export function planSort(d: QueryableResource, raw = DEFAULT_SORT): SortPlan {
  const desc = raw.startsWith('-');
  const field = desc ? raw.slice(1) : raw;
  const meta = descriptorMeta(d).byName.get(field);
  if (!d.sorts.includes(field) || !meta) throw refuse.sort(field || raw);
  return { token: raw, field, desc, kind: meta.kind, nullable: meta.nullable };
}

export function planFields(d: QueryableResource, requested: readonly string[] | undefined): readonly string[] {
  const meta = descriptorMeta(d);
  if (!requested) return meta.fields;
  for (const f of requested) if (!meta.byName.has(f)) throw refuse.fields(f);
  const wanted = new Set(requested);
  return meta.fields.filter((f) => f === 'id' || wanted.has(f));
}

function planFilter(d: QueryableResource, field: string, op: string, raw: string | null): FilterPlan {
  const allowed = d.filters[field];
  const meta = descriptorMeta(d).byName.get(field);
  if (!allowed || !meta) throw refuse.filterField(field);
  if (!(allowed as readonly string[]).includes(op)) throw refuse.filterOperator(field, op);
  if (raw === null) throw refuse.filterValue(field);
  const { kind } = meta;
  const scalar = (text: string): Scalar => {
    const v = parseScalar(kind, kind === 'text' ? text : text.trim());
    if (v === null) throw refuse.filterValue(field);
    return v;
  };
  switch (op as FilterOperator) {
    case 'is_null':
      if (raw !== 'true' && raw !== 'false') throw refuse.filterValue(field);
      return { field, kind, op: 'is_null', value: raw === 'true' };
    case 'in':
    case 'nin': {
      const parts = raw.split(',');
      if (raw === '' || parts.length > MAX_LIST_VALUES) throw refuse.filterValue(field);
      return { field, kind, op: op as 'in' | 'nin', values: parts.map(scalar) };
    }
    case 'ilike':
      // Only `%` is a wildcard (SPEC part 4): LIKE's `_` and escape character are taken literally.
      return { field, kind, op: 'ilike', value: String(scalar(raw)).replace(/[\\_]/g, (c) => `\\${c}`) };
    default:
      return { field, kind, op: op as 'eq', value: scalar(raw) };
  }
}

export function planList(d: QueryableResource, q: ParsedQuery): ListPlan {
  const filters = q.filters.map((f) => planFilter(d, f.field, f.op, f.value));
  const sort = planSort(d, q.sort);
  const fields = planFields(d, q.fields);
  const limit = planLimit(q.limit);
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor, sort.token, sort.kind, sort.nullable);
  return { limit, sort, fields, filters, after };
}

export function planItem(d: QueryableResource, q: Pick<ParsedQuery, 'fields' | 'include'>): ItemPlan {
  const wanted = new Set(q.include ?? []);
  return { fields: planFields(d, q.fields), includes: Object.keys(d.includes ?? {}).filter((name) => wanted.has(name)) };
}
