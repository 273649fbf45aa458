// Exact decimal money (DECISIONS B.5) and the sale calculation rules (SPEC 2.2), without I/O.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { dec, money, quantity, toJsonNumber } from '../src/domain/money.ts';
import { type ItemAmountsInput, itemAmounts, saleAmounts, saleFigures, saleTotal } from '../src/domain/sale-totals.ts';
import { generateExpenseNumber } from '../src/domain/numbering.ts';

const n = toJsonNumber;

describe('money', () => {
  it('multiplies and adds without binary floating point error', () => {
    assert.equal(n(money(dec(19.99).times(3))), 59.97);
    assert.equal(n(money(dec(0.1).plus(0.2))), 0.3);
    assert.equal(n(money(dec(4.35).times(100))), 435);
    assert.equal(n(money(dec(1.1).times(3))), 3.3);
    // The float results this module exists to avoid:
    assert.notEqual(0.1 + 0.2, 0.3);
    assert.notEqual(4.35 * 100, 435);
    assert.notEqual(1.1 * 3, 3.3);
  });

  it('rounds money half-up to 2 places and quantities to 3', () => {
    assert.equal(n(money(1.005)), 1.01); // (1.005).toFixed(2) is "1.00" in binary floating point
    assert.equal(n(money(2.675)), 2.68);
    assert.equal(n(money(0.004)), 0);
    assert.equal(n(quantity(1.0005)), 1.001);
    assert.equal(n(quantity(2.0004)), 2);
  });
});

describe('sale totals', () => {
  it('computes an item subtotal as quantity × unit_price', () => {
    const a = itemAmounts({ quantity: 3, unit_price: 19.99 });
    assert.equal(n(a.subtotal), 59.97);
    assert.equal(n(a.total_amount), 59.97);
  });

  it('takes the percentage then the amount discount off the subtotal, rounding once', () => {
    const a = itemAmounts({ quantity: 1, unit_price: 33.33, discount_percentage: 10 });
    assert.equal(n(a.total_amount), 30); // 33.33 − 3.333 = 29.997 → 30.00
    const b = itemAmounts({ quantity: 2, unit_price: 10.1, discount_percentage: 12.5, discount_amount: 0.7 });
    assert.equal(n(b.subtotal), 20.2);
    assert.equal(n(b.total_amount), 16.98); // 20.20 − 2.525 − 0.70 = 16.975 → 16.98
  });

  it('never lets an item total go negative', () => {
    const a = itemAmounts({ quantity: 1, unit_price: 5, discount_amount: 9 });
    assert.equal(n(a.total_amount), 0);
    assert.equal(n(itemAmounts({ quantity: 1, unit_price: 5, discount_percentage: 100, discount_amount: 1 }).total_amount), 0);
  });

  it('sums items and adds the delivery fee', () => {
    const s = saleAmounts(
      [
        { quantity: 1, unit_price: 0.1 },
        { quantity: 1, unit_price: 0.2 },
        { quantity: 0.333, unit_price: 3 },
      ],
      0.07,
    );
    assert.equal(n(s.subtotal), 1.3); // 0.10 + 0.20 + 1.00 (0.999 rounds up)
    assert.equal(n(s.total_amount), 1.37);
    assert.equal(n(s.discount_amount), 0);
    assert.equal(n(saleTotal([dec(59.97)], dec(10.01))), 69.98);
    assert.equal(n(saleTotal([dec(59.97)], null)), 59.97);
  });

  it('reports what the discounts took off the sale', () => {
    const s = saleAmounts(
      [
        { quantity: 1, unit_price: 100, discount_percentage: 15 },
        { quantity: 1, unit_price: 3, discount_amount: 5 },
      ],
      null,
    );
    assert.equal(n(s.subtotal), 103);
    assert.equal(n(s.total_amount), 85);
    assert.equal(n(s.discount_amount), 18);
  });
});

describe('sale figures (the amounts as JSON numbers)', () => {
  /** The decimal reference: saleAmounts, each amount as its JSON number. */
  const reference = (items: ItemAmountsInput[], fee: number | null) => {
    const s = saleAmounts(items, fee);
    const orNull = (v: ReturnType<typeof dec> | null) => (v === null ? null : n(v));
    return {
      items: s.items.map((a) => ({
        quantity: n(a.quantity),
        unit_price: n(a.unit_price),
        discount_amount: orNull(a.discount_amount),
        discount_percentage: orNull(a.discount_percentage),
        subtotal: n(a.subtotal),
        total_amount: n(a.total_amount),
      })),
      subtotal: n(s.subtotal),
      discount_amount: n(s.discount_amount),
      delivery_fee: orNull(s.delivery_fee),
      total_amount: n(s.total_amount),
    };
  };
  // Amounts as clients send them (whole cents and thousandths, small and near the limits), and any double in range.
  const inUnits = (scale: number, max: number) => fc.integer({ min: 0, max: Math.round(max * scale) }).map((k) => k / scale);
  const amount = (scale: number, max: number) =>
    fc.oneof(inUnits(scale, 1000), inUnits(scale, max), fc.double({ min: 0, max, noNaN: true }));
  const item = fc.record(
    {
      quantity: fc.oneof(inUnits(1000, 50), amount(1000, 99_999_999_999.999)).filter((q) => q > 0),
      unit_price: amount(100, 999_999_999_999.99),
      discount_amount: fc.option(amount(100, 999_999_999_999.99), { nil: null }),
      discount_percentage: fc.option(amount(100, 100), { nil: null }),
    },
    { requiredKeys: ['quantity', 'unit_price'] },
  );

  it('equal the decimal arithmetic, number for number and text for text', () => {
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 12 }),
        fc.option(amount(100, 999_999_999_999.99), { nil: null }),
        (items, fee) => {
          const figures = saleFigures(items, fee);
          const expected = reference(items, fee);
          assert.deepEqual(figures, expected);
          // The numeric column's text (String of the number) is the decimal's own text.
          const s = saleAmounts(items, fee);
          if (n(s.subtotal) <= 999_999_999_999.99) assert.equal(String(figures.subtotal), s.subtotal.toFixed());
          figures.items.forEach((f, i) => {
            if (n(s.items[i]!.total_amount) <= 999_999_999_999.99) assert.equal(String(f.total_amount), s.items[i]!.total_amount.toFixed());
          });
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('round half-up at each step as the decimal arithmetic does', () => {
    const f = saleFigures(
      [
        { quantity: 0.333, unit_price: 0.15 }, // 0.04995 → 0.05
        { quantity: 1, unit_price: 33.33, discount_percentage: 10 }, // 29.997 → 30
        { quantity: 1, unit_price: 3, discount_amount: 5 }, // never negative
        { quantity: 1.0005, unit_price: 1 }, // a fourth decimal: the decimal path
      ],
      2.5,
    );
    assert.deepEqual(
      f.items.map((i) => [i.subtotal, i.total_amount]),
      [
        [0.05, 0.05],
        [33.33, 30],
        [3, 0],
        [1, 1],
      ],
    );
    assert.equal(f.items[3]!.quantity, 1.001);
    assert.equal(f.subtotal, 37.38);
    assert.equal(f.discount_amount, 6.33);
    assert.equal(f.total_amount, 33.55);
  });
});

describe('expense numbers', () => {
  it('are API-<unix ms>-<6 base36>', () => {
    assert.match(generateExpenseNumber(1_795_000_000_123), /^API-1795000000123-[0-9a-z]{6}$/);
    assert.notEqual(generateExpenseNumber(), generateExpenseNumber());
  });
});
