// Exact decimal arithmetic for money and quantities (DECISIONS B.5): amounts never pass
// through binary floating point; money rounds half-up to 2 places, quantities to 3.
import { Decimal } from 'decimal.js';

/** A private Decimal constructor, so no other module's global settings can change ours. */
const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });
export type Dec = InstanceType<typeof D>;

export const MONEY_PLACES = 2;
export const QUANTITY_PLACES = 3;

/**
 * A JSON number (or a numeric string as PostgreSQL prints it) as an exact decimal.
 * A JS number converts through its shortest round-trip text, so 19.99 is exactly 19.99.
 */
export function dec(value: number | string | Dec): Dec {
  return new D(value);
}

export const ZERO: Dec = new D(0);

export const roundMoney = (value: Dec): Dec => value.toDecimalPlaces(MONEY_PLACES, D.ROUND_HALF_UP);
export const roundQuantity = (value: Dec): Dec => value.toDecimalPlaces(QUANTITY_PLACES, D.ROUND_HALF_UP);

/** Money input (number) → exact value rounded to cents. */
export const money = (value: number | string | Dec): Dec => roundMoney(dec(value));
export const quantity = (value: number | string | Dec): Dec => roundQuantity(dec(value));

/** The JSON number of a rounded decimal: its shortest text, so 59.97 stays 59.97. */
export const toJsonNumber = (value: Dec): number => Number(value.toFixed());

/** The text a numeric column receives: exact, no exponent. */
export const toSqlNumeric = (value: Dec): string => value.toFixed();

export const sum = (values: readonly Dec[]): Dec => values.reduce((acc, v) => acc.plus(v), ZERO);
export const max = (a: Dec, b: Dec): Dec => (a.greaterThan(b) ? a : b);
