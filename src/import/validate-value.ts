// Checks one value against its column type and returns the value to bind, or the reason it is
// refused. Strict as the API is: no coercion ("3" is not a number), real calendar dates. The
// formats are the API's own (schemas/formats.ts); a timestamp may also use a space for the `T`,
// as database dumps write them.
import { isCalendarDate, isClockTime, isUuid, readTimestamp, type TimestampDialect, timestampEpochMs } from '../schemas/formats.ts';
import type { ColumnSpec } from './column-spec.ts';

export type Checked = { ok: true; value: unknown } | { ok: false; reason: string };

const TIME = /^(\d{2}):(\d{2}):(\d{2})$/;
// The timestamp grammar of schemas/formats.ts, with a space for the `T` and offsets of hours alone, as dumps write them.
const IMPORT_TIMESTAMP: TimestampDialect = { spaceForT: true, hoursOnlyOffset: true, maxOffsetHours: 14 };

const ok = (value: unknown): Checked => ({ ok: true, value });
const no = (reason: string): Checked => ({ ok: false, reason });

export function checkValue(column: ColumnSpec, value: unknown): Checked {
  switch (column.kind) {
    case 'uuid':
      return typeof value === 'string' && isUuid(value) ? ok(value) : no('must be a UUID');
    case 'text':
      return typeof value === 'string' ? checkText(value, column.maxLength) : no('must be a string');
    case 'number':
      return typeof value === 'number' ? checkNumeric(column, value) : no('must be a number');
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return no('must be an integer');
      if ((column.min !== undefined && value < column.min) || (column.max !== undefined && value > column.max)) {
        return no(`must be an integer between ${column.min} and ${column.max}`);
      }
      return ok(value);
    case 'boolean':
      return typeof value === 'boolean' ? ok(value) : no('must be true or false');
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? ok(value) : no('must be a date YYYY-MM-DD');
    case 'time':
      return typeof value === 'string' && isTime(value) ? ok(value) : no('must be a time HH:MM:SS');
    case 'timestamp':
      return typeof value === 'string' && isTimestamp(value) ? ok(value) : no('must be an ISO 8601 timestamp (2026-11-21T10:00:00.000Z)');
    case 'text_array':
      if (!Array.isArray(value)) return no('must be an array of strings');
      for (const [i, item] of value.entries()) {
        if (typeof item !== 'string') return no(`must be an array of strings ([${i}] is not a string)`);
        if (item.includes('\u0000')) return no(`[${i}] must not contain the NUL character`);
        if (overLength(item, column.maxLength)) return no(`[${i}] must be at most ${column.maxLength} characters`);
      }
      return ok(value);
    case 'json':
      // PostgreSQL refuses the NUL character in jsonb strings.
      return JSON.stringify(value).includes('\\u0000') ? no('must not contain the NUL character') : ok(value);
  }
}

function checkText(value: string, maxLength: number | undefined): Checked {
  if (value.includes('\u0000')) return no('must not contain the NUL character');
  return overLength(value, maxLength) ? no(`must be at most ${maxLength} characters`) : ok(value);
}

/** Longer than `max` characters (code points, as the API's maxLength counts), the UTF-16 length first. */
function overLength(value: string, max: number | undefined): boolean {
  if (max === undefined || value.length <= max) return false;
  let count = 0;
  for (const _ of value) if (++count > max) return true;
  return false;
}

/** numeric(p, s) rounds to s places and refuses values of 10^(p-s) or more: refuse them here, by name. */
function checkNumeric(column: ColumnSpec, value: number): Checked {
  if (!Number.isFinite(value)) return no('must be a finite number');
  if (column.precision !== undefined && column.scale !== undefined) {
    const limit = 10 ** (column.precision - column.scale);
    const rounded = Math.abs(Number(value.toFixed(column.scale)));
    if (rounded >= limit) return no(`must be less than ${limit} in absolute value`);
  }
  return ok(value);
}

export function isTime(value: string): boolean {
  const m = TIME.exec(value);
  return m !== null && isClockTime(Number(m[1]), Number(m[2]), Number(m[3]));
}

export function isTimestamp(value: string): boolean {
  return isCanonicalTimestamp(value) || timestampMs(value) !== undefined;
}

const DIGIT_AT = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const digit = (value: string, i: number) => value.charCodeAt(i) - 48;
const pair = (value: string, i: number) => digit(value, i) * 10 + digit(value, i + 1);

/** `2026-11-21T10:00:00.000Z`, as exports and JavaScript write them, checked without a regular expression:
 *  the form almost every timestamp of a large import takes. Any other form goes through `timestampMs`. */
function isCanonicalTimestamp(value: string): boolean {
  if (value.length !== 24 || value[4] !== '-' || value[7] !== '-' || value[10] !== 'T' || value[13] !== ':') return false;
  if (value[16] !== ':' || value[19] !== '.' || value[23] !== 'Z') return false;
  for (const i of DIGIT_AT) if (digit(value, i) < 0 || digit(value, i) > 9) return false;
  const year = pair(value, 0) * 100 + pair(value, 2);
  const month = pair(value, 5);
  const day = pair(value, 8);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > (DAYS_IN_MONTH[month - 1] as number)) return false;
  if (month === 2 && day === 29 && !((year % 4 === 0 && year % 100 !== 0) || year % 400 === 0)) return false;
  return isClockTime(pair(value, 11), pair(value, 14), pair(value, 17));
}

/** Epoch milliseconds of an ISO 8601 timestamp, or undefined when it is not one. No zone means UTC, as the database session. */
export function timestampMs(value: string): number | undefined {
  const parts = readTimestamp(value, IMPORT_TIMESTAMP);
  return parts ? timestampEpochMs(parts) : undefined;
}
