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

export function outputRow(row: Record<string, unknown>, fields: readonly string[], meta: RowMeta): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const value = row[field] ?? null;
    if (value === null) {
      out[field] = null;
      continue;
    }
    const kind = meta.byName.get(field)?.kind;
    if (kind === 'timestamp') out[field] = timestamp(value);
    else if (kind === 'time' && typeof value === 'string') out[field] = value.slice(0, 8);
    else if (kind === 'json') out[field] = json(value);
    else out[field] = value;
  }
  return out;
}
