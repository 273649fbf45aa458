// Numbers the server generates (DECISIONS B.6): the name of the per-tenant `transaction_number`
// counter (resources/writes/transaction-number.ts keeps it) and the `expense_number` of an
// expense created without one.
import { randomInt } from 'node:crypto';

/** The tenant_counters row of sale numbers. */
export const TRANSACTION_COUNTER = 'transaction_number';

/*
 * The rule of sale numbers (DECISIONS B.6), which the statements of resources/writes/transaction-number.ts carry out:
 * - a new sale takes the counter's next value; concurrent sales get consecutive numbers, and a sale rolled back gives
 *   its number back;
 * - the tenant's first sale (no counter yet) takes one past the largest counted number already stored (an import's);
 * - a next value some stored sale has already (an import stored it after the counter was made) is skipped: the
 *   counter jumps one past the largest counted number stored.
 * An import moves the counter to at least its largest counted number (import/stream-import.ts).
 */

/** Digits of the longest stored number the counter counts: it then fits a bigint, and PostgreSQL's numeric. */
export const COUNTED_NUMBER_DIGITS = 18;

/** The format of a counted number, as a regular expression both JavaScript and PostgreSQL (`~`) read alike: decimal
 *  digits only. Other stored numbers (an import's `A-0012`) are kept, and never counted. */
export const COUNTED_NUMBER_PATTERN = `^[0-9]{1,${COUNTED_NUMBER_DIGITS}}$`;

const COUNTED_NUMBER = new RegExp(COUNTED_NUMBER_PATTERN);

/** The larger of `current` and `value` when `value` is a counted number; `current` otherwise. */
export function largerCountedNumber(current: bigint | null, value: unknown): bigint | null {
  if (typeof value !== 'string' || !COUNTED_NUMBER.test(value)) return current;
  const n = BigInt(value);
  return current === null || n > current ? n : current;
}

/** The tenant_counters row of event sequence numbers; it also says whether the tenant has webhook endpoints. */
export const EVENTS_COUNTER = 'events';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** `API-<unix milliseconds>-<6 random base36 characters>`. */
export function generateExpenseNumber(now: number = Date.now()): string {
  let suffix = '';
  for (let i = 0; i < 6; i++) suffix += BASE36[randomInt(36)];
  return `API-${now}-${suffix}`;
}
