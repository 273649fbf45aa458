// Typed values of the query language: a raw string (filter value) or a cursor's JSON value is
// parsed by the field's kind into the canonical text PostgreSQL casts back, or refused (null).
// Dates, times and UUIDs are the formats of schemas/formats.ts; a query string may also write a
// timestamp with a space for `T` (and for a `+` the query string decoded).
import type { FieldKind } from '../schemas/common.ts';
import { isCalendarDate, isClockTime, isUuid, readTimestamp, type TimestampDialect, timestampEpochMs } from '../schemas/formats.ts';

/** The PostgreSQL type a parameter of each kind is cast to; integers go through numeric so no
 *  out-of-range value can make the cast fail. */
export const SQL_TYPE: Readonly<Record<FieldKind, string>> = {
  uuid: 'uuid',
  text: 'text',
  number: 'numeric',
  integer: 'numeric',
  boolean: 'boolean',
  date: 'date',
  time: 'time',
  timestamp: 'timestamptz',
  json: 'jsonb',
  text_array: 'text[]',
};

const DECIMAL = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)$/;
const INTEGER = /^[-+]?\d+$/;
const TIME = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?$/;
// The timestamp grammar of schemas/formats.ts; `+` may have become a space in the query string.
const QUERY_TIMESTAMP: TimestampDialect = { spaceForT: true, spaceForPlus: true, hoursOnlyOffset: true, maxOffsetHours: 23 };
// What a cursor stores for a timestamp: PostgreSQL's full microsecond precision, UTC.
const CURSOR_TIMESTAMP = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{6}Z$/;
const MAX_DIGITS = 40;

/** A timestamp filter value as epoch milliseconds (a bare date is midnight UTC), or null. */
export function parseTimestampMs(value: string): number | null {
  if (isCalendarDate(value)) return Date.parse(`${value}T00:00:00Z`);
  const parts = readTimestamp(value, QUERY_TIMESTAMP);
  return parts && timestampEpochMs(parts);
}

/** A scalar filter value parsed by kind into the text sent as a cast parameter; null = refused.
 *  Timestamps come back as epoch milliseconds (the compiler turns them into ranges). */
export function parseScalar(kind: FieldKind, raw: string): string | number | null {
  switch (kind) {
    case 'uuid':
      return isUuid(raw) ? raw.toLowerCase() : null;
    case 'text':
      return raw.includes('\u0000') ? null : raw;
    case 'number':
      return raw.length <= MAX_DIGITS && DECIMAL.test(raw) ? raw : null;
    case 'integer':
      return raw.length <= MAX_DIGITS && INTEGER.test(raw) ? raw : null;
    case 'boolean':
      return raw === 'true' || raw === 'false' ? raw : null;
    case 'date':
      return isCalendarDate(raw) ? raw : null;
    case 'time': {
      const m = TIME.exec(raw);
      return m && isClockTime(Number(m[1]), Number(m[2]), Number(m[3] ?? 0)) ? raw : null;
    }
    case 'timestamp':
      return parseTimestampMs(raw);
    default:
      return null;
  }
}

/** A sort value read back from a cursor (JSON), checked by kind; undefined = refused. */
export function parseCursorValue(kind: FieldKind, value: unknown): string | null | undefined {
  if (value === null) return null;
  if (kind === 'number' || kind === 'integer') {
    if (typeof value !== 'number' || !Number.isFinite(value) || (kind === 'integer' && !Number.isInteger(value))) return undefined;
    return String(value);
  }
  if (typeof value !== 'string') return undefined;
  if (kind === 'timestamp') {
    const m = CURSOR_TIMESTAMP.exec(value);
    return m && isCalendarDate(m[1] as string) && isClockTime(Number(m[2]), Number(m[3]), Number(m[4])) ? value : undefined;
  }
  const parsed = parseScalar(kind, value);
  return typeof parsed === 'string' ? parsed : undefined;
}
