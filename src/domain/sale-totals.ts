// The sale calculation rules of SPEC 2.2, in exact decimals: per item subtotal and total,
// then the sale's subtotal, discount and total. Totals sent by the client never get here.
import { type Dec, dec, max, money, quantity, roundMoney, sum, ZERO } from './money.ts';

export interface ItemAmountsInput {
  quantity: number;
  unit_price: number;
  discount_amount?: number | null;
  discount_percentage?: number | null;
}

export interface ItemAmounts {
  quantity: Dec;
  unit_price: Dec;
  discount_amount: Dec | null;
  discount_percentage: Dec | null;
  /** quantity × unit_price, rounded to cents. */
  subtotal: Dec;
  /** subtotal − subtotal × percentage / 100 − discount_amount, rounded to cents, never negative. */
  total_amount: Dec;
}

export interface SaleAmounts {
  items: ItemAmounts[];
  subtotal: Dec;
  /** What the item discounts took off in the end (subtotal − Σ item totals). */
  discount_amount: Dec;
  delivery_fee: Dec | null;
  total_amount: Dec;
}

const HUNDRED = dec(100);

export function itemAmounts(input: ItemAmountsInput): ItemAmounts {
  const qty = quantity(input.quantity);
  const unitPrice = money(input.unit_price);
  const discountAmount = input.discount_amount == null ? null : money(input.discount_amount);
  const discountPercentage = input.discount_percentage == null ? null : money(input.discount_percentage);
  const subtotal = roundMoney(qty.times(unitPrice));
  // One rounding at the end: the percentage share is kept exact until the total is rounded.
  const percentageShare = discountPercentage ? subtotal.times(discountPercentage).dividedBy(HUNDRED) : ZERO;
  const total = roundMoney(subtotal.minus(percentageShare).minus(discountAmount ?? ZERO));
  return {
    quantity: qty,
    unit_price: unitPrice,
    discount_amount: discountAmount,
    discount_percentage: discountPercentage,
    subtotal,
    total_amount: max(total, ZERO),
  };
}

/** Σ item totals + delivery fee: the rule PATCH of `delivery_fee` reapplies to stored items. */
export function saleTotal(itemTotals: readonly Dec[], deliveryFee: Dec | null): Dec {
  return roundMoney(sum(itemTotals).plus(deliveryFee ?? ZERO));
}

export function saleAmounts(items: readonly ItemAmountsInput[], deliveryFee: number | null | undefined): SaleAmounts {
  const computed = items.map(itemAmounts);
  const subtotal = sum(computed.map((i) => i.subtotal));
  const itemsTotal = sum(computed.map((i) => i.total_amount));
  const fee = deliveryFee == null ? null : money(deliveryFee);
  return {
    items: computed,
    subtotal,
    discount_amount: subtotal.minus(itemsTotal),
    delivery_fee: fee,
    total_amount: saleTotal(
      computed.map((i) => i.total_amount),
      fee,
    ),
  };
}

/** One item's amounts as JSON numbers: each number's shortest text is the exact decimal (see `saleFigures`). */
export interface ItemFigures {
  quantity: number;
  unit_price: number;
  discount_amount: number | null;
  discount_percentage: number | null;
  subtotal: number;
  total_amount: number;
}

export interface SaleFigures {
  items: ItemFigures[];
  subtotal: number;
  discount_amount: number;
  delivery_fee: number | null;
  total_amount: number;
}

/**
 * `saleAmounts` as JSON numbers, the form a sale's answer and its numeric columns (the number's text) take. Inputs
 * as clients send them (quantities to 3 places, money and percentages to 2, amounts up to about 9 × 10⁹) are
 * computed in whole thousandths and cents, which doubles hold exactly: the same result as the decimal
 * arithmetic without its allocations, which were a tenth of a sale's garbage (docs/performance.md). Anything else
 * takes `saleAmounts`. A number k / 100 (or k / 1000) is the double nearest that decimal, so its shortest text is
 * the decimal itself; every stored amount has at most 14 significant digits (numeric(14, 2) and the limits), which
 * a double round-trips, so the decimal path's results convert exactly too.
 */
export function saleFigures(items: readonly ItemAmountsInput[], deliveryFee: number | null | undefined): SaleFigures {
  return figuresInUnits(items, deliveryFee) ?? figuresOf(saleAmounts(items, deliveryFee));
}

const asNumber = (value: Dec): number => Number(value.toFixed());
const asNumberOrNull = (value: Dec | null): number | null => (value === null ? null : asNumber(value));

function figuresOf(amounts: SaleAmounts): SaleFigures {
  return {
    items: amounts.items.map((a) => ({
      quantity: asNumber(a.quantity),
      unit_price: asNumber(a.unit_price),
      discount_amount: asNumberOrNull(a.discount_amount),
      discount_percentage: asNumberOrNull(a.discount_percentage),
      subtotal: asNumber(a.subtotal),
      total_amount: asNumber(a.total_amount),
    })),
    subtotal: asNumber(amounts.subtotal),
    discount_amount: asNumber(amounts.discount_amount),
    delivery_fee: asNumberOrNull(amounts.delivery_fee),
    total_amount: asNumber(amounts.total_amount),
  };
}

/** `value` × `scale` when that is a whole number whose quotient by `scale` is `value` again (so `value`'s text has
 *  at most log10(scale) decimals), not negative, and small enough for the products below; else undefined. */
function wholeUnits(value: number, scale: number): number | undefined {
  const units = Math.round(value * scale);
  return units >= 0 && units <= MAX_UNITS && units / scale === value ? units : undefined;
}

/** Inputs up to this many units (cents, thousandths) keep every product below 2⁵³ (checked again where it matters). */
const MAX_UNITS = 2 ** 40;

/** x / d rounded half-up, for whole x ≥ 0 below 2⁵³ (exact: no division is rounded). */
function roundedQuotient(x: number, d: number): number {
  const rest = x % d;
  const quotient = (x - rest) / d;
  return rest * 2 >= d ? quotient + 1 : quotient;
}

const safe = (x: number) => x <= Number.MAX_SAFE_INTEGER;

function figuresInUnits(items: readonly ItemAmountsInput[], deliveryFee: number | null | undefined): SaleFigures | undefined {
  const out: ItemFigures[] = [];
  let subtotal = 0;
  let itemsTotal = 0;
  for (const item of items) {
    const thousandths = wholeUnits(item.quantity, 1000);
    const price = wholeUnits(item.unit_price, 100);
    const discount = item.discount_amount == null ? 0 : wholeUnits(item.discount_amount, 100);
    const percentage = item.discount_percentage == null ? 0 : wholeUnits(item.discount_percentage, 100);
    if (thousandths === undefined || price === undefined || discount === undefined || percentage === undefined) return undefined;
    const product = thousandths * price; // in 10⁻⁵
    if (!safe(product)) return undefined;
    const itemSubtotal = roundedQuotient(product, 1000); // cents
    // subtotal − subtotal × percentage / 100 − discount, in 10⁻⁶ (cents / 10 000), rounded once at the end.
    if (!safe(itemSubtotal * 10_000) || !safe(itemSubtotal * percentage) || !safe(discount * 10_000)) return undefined;
    const exact = itemSubtotal * 10_000 - itemSubtotal * percentage - discount * 10_000;
    const itemTotal = exact <= 0 ? 0 : roundedQuotient(exact, 10_000);
    subtotal += itemSubtotal;
    itemsTotal += itemTotal;
    out.push({
      quantity: thousandths / 1000,
      unit_price: price / 100,
      discount_amount: item.discount_amount == null ? null : discount / 100,
      discount_percentage: item.discount_percentage == null ? null : percentage / 100,
      subtotal: itemSubtotal / 100,
      total_amount: itemTotal / 100,
    });
  }
  const fee = deliveryFee == null ? 0 : wholeUnits(deliveryFee, 100);
  if (fee === undefined || !safe(subtotal) || !safe(itemsTotal + fee)) return undefined;
  return {
    items: out,
    subtotal: subtotal / 100,
    discount_amount: (subtotal - itemsTotal) / 100,
    delivery_fee: deliveryFee == null ? null : fee / 100,
    total_amount: (itemsTotal + fee) / 100,
  };
}
