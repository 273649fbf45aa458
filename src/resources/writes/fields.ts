// Field builders of write bodies: the constraints of SPEC parts 2 and 7 in one place, so
// every resource spells "money", "date" or "nullable e-mail" the same way.
import { type TOptional, type TSchema, type TUnion, Type, type TUnsafe } from '@sinclair/typebox';
import { LENGTH, MAX_LIST_ITEMS, NO_NUL_PATTERN } from '../../schemas/bounds.ts';
import type { Body, Row, WriteContext } from '../descriptor.ts';

/** numeric(14, 2) and numeric(14, 3) columns: larger values would not fit. */
export const MAX_MONEY = 999_999_999_999.99;
export const MAX_QUANTITY = 99_999_999_999.999;
export const MAX_INTEGER = 2_147_483_647;
const UUID_LENGTH = 36;
/** `YYYY-MM-DD`; a date-time with nanoseconds and an offset is 35 characters. */
const DATE_LENGTH = 10;
const TIMESTAMP_LENGTH = 35;

type Opts = { description?: string; examples?: unknown[] };
/** Every text input says its longest value (schemas/bounds.ts): the type makes it required. */
type TextOpts = Opts & { minLength?: number; maxLength: number };

const orNull = <T extends TSchema>(schema: T, opts: Opts = {}): TUnion<[T, ReturnType<typeof Type.Null>]> =>
  Type.Union([schema, Type.Null()], opts);

export const W = {
  text: (opts: TextOpts & { default?: string }) => Type.String({ pattern: NO_NUL_PATTERN, ...opts }),
  textOrNull: (opts: TextOpts) => {
    const { description, examples, ...limits } = opts;
    return orNull(Type.String({ pattern: NO_NUL_PATTERN, ...limits }), { description, examples });
  },
  uuid: (opts: Opts = {}) => Type.String({ format: 'uuid', maxLength: UUID_LENGTH, ...opts }),
  uuidOrNull: (opts: Opts = {}) => orNull(Type.String({ format: 'uuid', maxLength: UUID_LENGTH }), opts),
  emailOrNull: (opts: Opts = {}) =>
    orNull(Type.String({ format: 'email', maxLength: LENGTH.email }), { examples: ['cliente@example.com'], ...opts }),
  dateOrNull: (opts: Opts = {}) => orNull(Type.String({ format: 'date', maxLength: DATE_LENGTH }), { examples: ['2026-11-21'], ...opts }),
  timestamp: (opts: Opts = {}) =>
    Type.String({ format: 'date-time', maxLength: TIMESTAMP_LENGTH, examples: ['2026-11-21T10:00:00.000Z'], ...opts }),
  /** Money: a JSON number of reais, ≥ 0, rounded half-up to cents by the server. */
  money: (opts: Opts = {}) => Type.Number({ format: 'double', minimum: 0, maximum: MAX_MONEY, ...opts }),
  moneyOrNull: (opts: Opts = {}) => orNull(Type.Number({ format: 'double', minimum: 0, maximum: MAX_MONEY }), opts),
  quantity: (opts: Opts = {}) => Type.Number({ format: 'double', exclusiveMinimum: 0, maximum: MAX_QUANTITY, ...opts }),
  percentageOrNull: (opts: Opts = {}) => orNull(Type.Number({ format: 'double', minimum: 0, maximum: 100 }), opts),
  positiveIntegerOrNull: (opts: Opts = {}) => orNull(Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_INTEGER }), opts),
  boolean: (opts: Opts = {}) => Type.Boolean(opts),
  booleanOrNull: (opts: Opts = {}) => orNull(Type.Boolean(), opts),
  textArrayOrNull: (opts: Opts & { itemMaxLength: number }) => {
    const { itemMaxLength, ...rest } = opts;
    return orNull(Type.Array(Type.String({ pattern: NO_NUL_PATTERN, maxLength: itemMaxLength }), { maxItems: MAX_LIST_ITEMS }), rest);
  },
  /** A closed list of strings, as one `enum` (so a refusal is one `invalid_enum`, not a union's errors). */
  enum: <const T extends readonly string[]>(values: T, opts: Opts & { default?: T[number] } = {}) =>
    Type.Unsafe<T[number]>({ type: 'string', enum: [...values], maxLength: Math.max(...values.map((v) => v.length)), ...opts }) as TUnsafe<
      T[number]
    >,
};

/** Marks every property optional (a POST's optional fields). */
export function optional<T extends Record<string, TSchema>>(properties: T) {
  const out: Record<string, TSchema> = {};
  for (const [name, schema] of Object.entries(properties)) out[name] = Type.Optional(schema);
  return out as { [K in keyof T]: TOptional<T[K]> };
}

/** The PATCH body of a resource: the POST fields, none required, without POST-only defaults. */
export function partialOf<T extends Record<string, TSchema>>(properties: T, opts: { title?: string } = {}) {
  const out: Record<string, TSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const { default: _default, ...rest } = schema as TSchema & { default?: unknown };
    out[name] = Type.Optional(rest as TSchema);
  }
  return Type.Object(out as { [K in keyof T]: TOptional<T[K]> }, opts);
}

/** A new record's columns for a resource answered from its values (`answersFromValues`): active, and dated by this
 *  process's clock, as a sale is. */
export const activeFromNow = (ctx: WriteContext, body: Body): Row => ({
  ...body,
  is_active: true,
  created_at: new Date(ctx.now()).toISOString(),
});
