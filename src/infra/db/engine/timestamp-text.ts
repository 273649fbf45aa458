// timestamptz as both drivers hand it over: the ISO 8601 string the API prints (UTC, milliseconds,
// DECISIONS B.14), cut from the text PostgreSQL sends, instead of a Date the response then turns
// back into that string. A list page carries two timestamps per row; building and printing those
// Dates was the largest cost of ours in a list request's profile (docs/performance.md).
import type { ColumnType } from 'kysely';
import { RFC3339, readTimestamp, timestampEpochMs } from '../../../schemas/formats.ts';

/** A timestamptz column as Kysely sees it (tables.ts): read as that string, written as a Date or a string. */
export type TimestampText = ColumnType<string, Date | string, Date | string>;

/**
 * `2026-11-22 10:11:12.123456+00` (the session's TimeZone is UTC) → `2026-11-22T10:11:12.123Z`.
 * Digits past the millisecond are dropped, as `new Date(text)` drops them. Any other form (another
 * offset, a year past 9999) goes through Date; text Date cannot read (`infinity`, BC) stays as is.
 */
export function isoTimestamp(text: string): string {
  const n = text.length;
  if (n >= 22 && n <= 29 && text.charCodeAt(10) === 32 && text.charCodeAt(n - 3) === 43 && text.endsWith('+00')) {
    if (n === 22) return `${text.slice(0, 10)}T${text.slice(11, 19)}.000Z`;
    if (text.charCodeAt(19) === 46) {
      const fraction = text.slice(20, n - 3);
      const ms = fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0');
      return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
    }
  }
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? text : date.toISOString();
}

/**
 * A timestamp a client sent (RFC 3339, validated), as the API prints it once stored: what `isoTimestamp`
 * makes of the column PostgreSQL fills from it, without asking PostgreSQL. Undefined where the two could
 * differ: more than 6 fractional digits (PostgreSQL rounds them to the microsecond) or a year outside
 * 1000–9998 (printed through Date, or outside its 4-digit form).
 */
export function printedTimestamp(input: string): string | undefined {
  const parts = readTimestamp(input, RFC3339);
  if (!parts || parts.fraction.length > 6 || parts.year < 1000 || parts.year > 9998) return undefined;
  // Microseconds are stored exactly and printed cut to the millisecond; without an offset the session's zone (UTC) applies.
  const printed = new Date(timestampEpochMs(parts)).toISOString();
  return printed.length === 24 ? printed : undefined;
}
