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
  /** Requested includes the resource knows, in descriptor order: one statement each per page. */
  includes: readonly string[];
  /** `count=`: whether and how the page reports how many records match the filters. */
  count: CountKind | null;
}

export const COUNT_KINDS = ['exact', 'estimated'] as const;
export type CountKind = (typeof COUNT_KINDS)[number];
/** Under this many matching records, `count=estimated` is exact. */
export const EXACT_COUNT_BELOW = 10_000;

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

/** The filters of a list query alone (a digest reads no sort, page or cursor). */
export const planFilters = (d: QueryableResource, q: ParsedQuery): FilterPlan[] =>
  q.filters.map((f) => planFilter(d, f.field, f.op, f.value));

function planCount(raw: string | undefined): CountKind | null {
  if (raw === undefined) return null;
  if (!(COUNT_KINDS as readonly string[]).includes(raw)) throw refuse.count();
  return raw as CountKind;
}

/** The includes asked for that the resource knows, in descriptor order; the others are ignored (SPEC part 4). */
function planIncludes(d: QueryableResource, include: readonly string[] | undefined): readonly string[] {
  const wanted = new Set(include ?? []);
  return Object.keys(d.includes ?? {}).filter((name) => wanted.has(name));
}

export function planList(d: QueryableResource, q: ParsedQuery): ListPlan {
  const filters = planFilters(d, q);
  const sort = planSort(d, q.sort);
  const fields = planFields(d, q.fields);
  const limit = planLimit(q.limit);
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor, sort.token, sort.kind, sort.nullable);
  return { limit, sort, fields, filters, after, includes: planIncludes(d, q.include), count: planCount(q.count) };
}

export function planItem(d: QueryableResource, q: Pick<ParsedQuery, 'fields' | 'include'>): ItemPlan {
  return { fields: planFields(d, q.fields), includes: planIncludes(d, q.include) };
}
