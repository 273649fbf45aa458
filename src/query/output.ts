// Rows as they leave the database → plain JSON-ready objects holding exactly the requested fields:
// timestamps become UTC ISO 8601 strings with milliseconds, times `HH:MM:SS` (DECISIONS B.14).
// Converting here rather than in the serializer keeps `anyOf [date-time, null]` schemas honest.
import type { RowMeta } from './row-meta.ts';

function timestamp(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return new Date(value).toISOString();
  return value;
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

const CONVERT: Partial<Record<string, Convert>> = {
  timestamp,
  time: (value) => (typeof value === 'string' ? value.slice(0, 8) : value),
  json,
};

/** The conversion of each field, in field order; worked out once per projection, not per row. */
const plans = new WeakMap<readonly string[], (Convert | undefined)[]>();

function conversions(fields: readonly string[], meta: RowMeta): (Convert | undefined)[] {
  let plan = plans.get(fields);
  if (!plan) {
    plan = fields.map((field) => CONVERT[meta.byName.get(field)?.kind ?? '']);
    plans.set(fields, plan);
  }
  return plan;
}

export function outputRow(row: Record<string, unknown>, fields: readonly string[], meta: RowMeta): Record<string, unknown> {
  const convert = conversions(fields, meta);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    const value = row[field];
    const conversion = convert[i];
    out[field] = value == null ? null : conversion ? conversion(value) : value;
  }
  return out;
}
