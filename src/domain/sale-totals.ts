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
