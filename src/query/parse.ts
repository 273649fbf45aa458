// Stage 1 of the list query language: raw query keys → a syntactic ParsedQuery. Knows nothing of
// resources; only refuses what no resource could accept (repeated or malformed parameters).
//
// Unknown parameters that are not filters are ignored (clients add tracking or cache-busting
// parameters), but every key spelled like a filter (`filter…`) must be one: a misspelled filter
// silently widening a result is worse than a 422.
import { refuse } from './refusals.ts';

export interface RawFilter {
  field: string;
  /** As written: may be empty or unknown; the planner refuses it against the descriptor. */
  op: string;
  /** null when the key was repeated (or not a string): refused as a bad value once field and op pass. */
  value: string | null;
}

export interface ParsedQuery {
  limit?: string;
  cursor?: string;
  sort?: string;
  fields?: string[];
  include?: string[];
  /** `count=exact|estimated` as written (the planner refuses other values). */
  count?: string;
  filters: RawFilter[];
}

const FILTER_KEY = /^filter\[([^[\]]*)\](?:\[([^[\]]*)\])?(.*)$/s;

/** Query strings arrive as `Record<string, string | string[]>` (fast-querystring): repeated keys
 *  become arrays, and anything else (a nested object from another parser) is malformed. */
type RawQuery = Record<string, unknown>;

function single(value: unknown, onRepeat: () => Error): string {
  if (typeof value === 'string') return value;
  throw onRepeat();
}

/** Repeated list parameters (`fields=a&fields=b`) are merged; empty items are dropped. */
function list(value: unknown): string[] | null {
  const parts = typeof value === 'string' ? [value] : Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : null;
  if (!parts) return null;
  return parts
    .flatMap((p: string) => p.split(','))
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

export function parseQuery(query: unknown): ParsedQuery {
  const raw: RawQuery = query && typeof query === 'object' ? (query as RawQuery) : {};
  const parsed: ParsedQuery = { filters: [] };
  for (const key of Object.keys(raw)) {
    const value = raw[key];
    switch (key) {
      case 'limit':
        parsed.limit = single(value, refuse.limit);
        break;
      case 'cursor': {
        const cursor = single(value, refuse.cursor);
        if (cursor !== '') parsed.cursor = cursor;
        break;
      }
      case 'sort': {
        const sort = single(value, () => refuse.sort(Array.isArray(value) ? value.join(',') : ''));
        if (sort !== '') parsed.sort = sort;
        break;
      }
      case 'fields': {
        const fields = list(value);
        if (!fields) throw refuse.fields('');
        if (fields.length > 0) parsed.fields = fields;
        break;
      }
      case 'include':
        // Unknown or unreadable include values are ignored (SPEC part 4).
        parsed.include = list(value) ?? [];
        break;
      case 'count': {
        const count = single(value, refuse.count);
        if (count !== '') parsed.count = count;
        break;
      }
      default:
        if (key.startsWith('filter')) parsed.filters.push(parseFilter(key, value));
    }
  }
  return parsed;
}

function parseFilter(key: string, value: unknown): RawFilter {
  const m = FILTER_KEY.exec(key);
  if (!m || m[1] === '') throw refuse.filterField(m ? '' : key);
  // `filter[f]` (no operator) and `filter[f][op][x]` keep their malformed operator text for the detail.
  const op = `${m[2] ?? ''}${m[3]}`;
  return { field: m[1] as string, op, value: typeof value === 'string' ? value : null };
}

/** GET by id reads only `fields` and `include`; list parameters there are ignored. */
export function parseItemQuery(query: unknown): Pick<ParsedQuery, 'fields' | 'include'> {
  const raw: RawQuery = query && typeof query === 'object' ? (query as RawQuery) : {};
  const out: Pick<ParsedQuery, 'fields' | 'include'> = {};
  if (raw.fields !== undefined) {
    const fields = list(raw.fields);
    if (!fields) throw refuse.fields('');
    if (fields.length > 0) out.fields = fields;
  }
  if (raw.include !== undefined) out.include = list(raw.include) ?? [];
  return out;
}
