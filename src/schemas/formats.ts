// The value formats of the API, defined once: `uuid`, `date` (a real calendar day), `date-time`
// (RFC 3339; without an offset it is UTC) and `email`. The body validator registers them with
// Ajv under these names, the query parser and the CLI call the same functions, and the import
// can too: a value means the same thing wherever it enters.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// The one timestamp grammar (see readTimestamp): date, separator, hh:mm, optional seconds and fraction, optional zone.
const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})([Tt ])(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:[Zz]|([+\- ])(\d{2})(?::?(\d{2}))?)?$/;
const EMAIL = /^[^\s@"(),:;<>[\]\\]+@[^\s@"(),:;<>[\]\\.]+(?:\.[^\s@"(),:;<>[\]\\.]+)+$/;
const MAX_EMAIL_LENGTH = 254;

export const isUuid = (value: string): boolean => UUID.test(value);

/** A real calendar day (2026-02-30 is refused) that PostgreSQL stores (year 1 onwards). */
export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] as number;
  return day <= days;
}

/** A wall-clock time of day: hours 0–23, minutes and seconds 0–59. */
export const isClockTime = (hour: number, minute: number, second: number): boolean => hour < 24 && minute < 60 && second < 60;

/** A timestamp read by `readTimestamp`: a real calendar day and wall-clock time, and its offset from UTC. */
export interface TimestampParts {
  /** `YYYY-MM-DD`. */
  date: string;
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** The fraction of a second's digits as written (up to 9), '' for none. */
  fraction: string;
  /** Minutes east of UTC; 0 without a zone (read as UTC, the sessions' zone). */
  offsetMinutes: number;
}

/** What else than RFC 3339 an entry point of values takes of the grammar. */
export interface TimestampDialect {
  /** A space for the `T` (database dumps, query strings). */
  spaceForT?: boolean;
  /** A space for the offset's `+` (a query string decodes `+` as a space). */
  spaceForPlus?: boolean;
  /** An offset of hours alone (`+03`). */
  hoursOnlyOffset?: boolean;
  /** The largest offset's hours (minutes up to 59). */
  maxOffsetHours: number;
}

/** RFC 3339 as the API's bodies take it (the `date-time` format). */
export const RFC3339: TimestampDialect = { maxOffsetHours: 23 };

/**
 * The one timestamp grammar: `YYYY-MM-DD`, `T` (or `t`), `hh:mm`, optional `:ss` with a fraction of up to 9 digits,
 * and an optional zone, `Z` (or `z`) or a sign with `hh:mm` or `hhmm`; `dialect` says which looser forms it also
 * takes. The parts, or null when `value` is not such a timestamp of a real day and time.
 */
export function readTimestamp(value: string, dialect: TimestampDialect): TimestampParts | null {
  const m = TIMESTAMP.exec(value);
  if (!m) return null;
  const [, date = '', separator, h, mi, s = '0', fraction = '', sign, offsetHours, offsetMinutes] = m;
  if (separator === ' ' && !dialect.spaceForT) return null;
  if (!isCalendarDate(date)) return null;
  const [hour, minute, second] = [Number(h), Number(mi), Number(s)];
  if (!isClockTime(hour, minute, second)) return null;
  let offset = 0;
  if (sign !== undefined) {
    if ((sign === ' ' && !dialect.spaceForPlus) || (offsetMinutes === undefined && !dialect.hoursOnlyOffset)) return null;
    const [oh, om] = [Number(offsetHours), Number(offsetMinutes ?? 0)];
    if (oh > dialect.maxOffsetHours || om > 59) return null;
    offset = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return { date, year, month, day, hour, minute, second, fraction, offsetMinutes: offset };
}

/** Epoch milliseconds of a timestamp's parts, digits past the millisecond dropped (as `Date` drops them). */
export function timestampEpochMs(t: TimestampParts): number {
  const at = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0–99 as 1900–1999.
  at.setUTCFullYear(t.year, t.month - 1, t.day);
  at.setUTCHours(t.hour, t.minute, t.second, Number(t.fraction.padEnd(3, '0').slice(0, 3)));
  return at.getTime() - t.offsetMinutes * 60_000;
}

/** ISO 8601 / RFC 3339 timestamp; without an offset it is read as UTC (the sessions' zone). */
export const isTimestamp = (value: string): boolean => readTimestamp(value, RFC3339) !== null;

export const isEmail = (value: string): boolean => value.length <= MAX_EMAIL_LENGTH && EMAIL.test(value);

/** The formats write schemas use (`Type.String({ format })`), by their JSON Schema names. */
export const FORMATS = {
  uuid: isUuid,
  date: isCalendarDate,
  'date-time': isTimestamp,
  email: isEmail,
} as const satisfies Record<string, (value: string) => boolean>;

export type FormatName = keyof typeof FORMATS;

/** Number formats of the description (OpenAPI's `int32`, `int64`, `double`), for generated clients;
 *  `minimum`/`maximum` say the real range, so these only check the value fits the type. */
export const NUMBER_FORMATS = {
  int32: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31,
  int64: (value: number) => Number.isSafeInteger(value),
  double: (value: number) => Number.isFinite(value),
} as const satisfies Record<string, (value: number) => boolean>;
