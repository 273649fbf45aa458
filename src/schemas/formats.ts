// The value formats of the API, defined once: `uuid`, `date` (a real calendar day), `date-time`
// (RFC 3339; without an offset it is UTC) and `email`. The body validator registers them with
// Ajv under these names, the query parser and the CLI call the same functions, and the import
// can too: a value means the same thing wherever it enters.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2}):?(\d{2}))?$/;
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

/** ISO 8601 / RFC 3339 timestamp; without an offset it is read as UTC (the sessions' zone). */
export function isTimestamp(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m || !isCalendarDate(m[1] as string)) return false;
  if (!isClockTime(Number(m[2]), Number(m[3]), Number(m[4] ?? 0))) return false;
  return m[5] === undefined || (Number(m[5]) <= 23 && Number(m[6]) <= 59);
}

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
