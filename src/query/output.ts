// Rows as they leave the database → plain JSON-ready objects holding exactly the requested fields:
// timestamps become UTC ISO 8601 strings with milliseconds, times `HH:MM:SS` (DECISIONS B.14).
// Converting here, not in a serializer, gives responses, events and webhooks the same values.
import type { FieldKind } from '../schemas/common.ts';
import type { RowMeta } from './row-meta.ts';

/** Both drivers give timestamptz as the string the API prints (infra/db/engine/timestamp-text.ts), which
 *  passes as is (the generated output tests for an object first); a Date from elsewhere is printed. */
function timestamp(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : value;
}

/** jsonb arrives parsed from PGlite but as text from postgres.js (as configured): read both alike. */
function json(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

type Convert = (value: unknown) => unknown;
type Output = (row: Record<string, unknown>) => Record<string, unknown>;

const CONVERT: Partial<Record<string, Convert>> = {
  timestamp,
  time: (value) => (typeof value === 'string' ? value.slice(0, 8) : value),
  json,
};

/**
 * One function per projection that returns the output object as a single literal: V8 allocates it
 * with its final shape at once, where adding twenty-odd fields one by one to `{}` grew and
 * re-shaped it per row (7.7% of a list request's CPU in the profile, docs/performance.md). The field
 * names come from the descriptor (planFields only keeps known ones) and are quoted by JSON.stringify.
 */
function compileOutput(fields: readonly string[], meta: RowMeta): Output {
  const converts: Convert[] = [];
  const entries = fields.map((field) => {
    const key = JSON.stringify(field);
    const kind = meta.byName.get(field)?.kind ?? '';
    const convert = CONVERT[kind];
    if (!convert) return `${key}: r[${key}] ?? null`;
    converts.push(convert);
    if (kind === 'timestamp')
      return `${key}: typeof r[${key}] === 'object' && r[${key}] !== null ? c[${converts.length - 1}](r[${key}]) : r[${key}] ?? null`;
    return `${key}: r[${key}] == null ? null : c[${converts.length - 1}](r[${key}])`;
  });
  return new Function('c', `return (r) => ({ ${entries.join(', ')} });`)(converts) as Output;
}

/** Per row schema: projection (its field list) → its output function. Bounded, as clients choose projections. */
const outputs = new WeakMap<RowMeta, Map<string, Output>>();
const MAX_PROJECTIONS = 500;

/** The output function of a projection: look it up once per page, then call it per row. */
export function rowOutput(fields: readonly string[], meta: RowMeta): Output {
  return cachedOutput(fields, meta, false);
}

/**
 * The output function for rows bound for a route's response serializer only. For a whole record
 * whose fields need no converting (both drivers already give timestamps as the API prints them), the
 * driver's row goes as it is: fast-json-stringify writes the schema's fields and ignores the rest (a
 * cursor column), so copying each row into a new object only fed the garbage collector. Events,
 * webhooks and exports keep rowOutput: they serialize every key of what they are given.
 */
export function responseRowOutput(fields: readonly string[], meta: RowMeta): Output {
  return cachedOutput(fields, meta, true);
}

const passThrough: Output = (row) => row;
const needsConverting = (kind: FieldKind | undefined) => kind !== undefined && kind !== 'timestamp' && CONVERT[kind] !== undefined;

function cachedOutput(fields: readonly string[], meta: RowMeta, forResponse: boolean): Output {
  let byProjection = outputs.get(meta);
  if (!byProjection) {
    byProjection = new Map();
    outputs.set(meta, byProjection);
  }
  const key = `${forResponse ? 'response:' : ''}${fields === meta.fields ? '' : fields.join(',')}`;
  let output = byProjection.get(key);
  if (!output) {
    // Only a whole projection: a sparse one's serializer writes every field present, and the row
    // may hold fields read for the cursor or an include that the client did not ask for.
    const asIs =
      forResponse && fields.length === meta.fields.length && !fields.some((field) => needsConverting(meta.byName.get(field)?.kind));
    output = asIs ? passThrough : compileOutput(fields, meta);
    if (byProjection.size >= MAX_PROJECTIONS) byProjection.clear();
    byProjection.set(key, output);
  }
  return output;
}

export function outputRow(row: Record<string, unknown>, fields: readonly string[], meta: RowMeta): Record<string, unknown> {
  return rowOutput(fields, meta)(row);
}
