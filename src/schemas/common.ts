// Shared TypeBox pieces. Each field builder tags its schema with `x-balcao-type`, which the
// query parser reads to type filter values: one schema gives validation, types,
// serialization, OpenAPI and the query language.
import { type TSchema, Type } from '@sinclair/typebox';

export type FieldKind = 'uuid' | 'text' | 'number' | 'integer' | 'boolean' | 'date' | 'time' | 'timestamp' | 'json' | 'text_array';

const tag = <T extends TSchema>(kind: FieldKind, schema: T): T => Object.assign(schema, { 'x-balcao-type': kind });
const orNull = <T extends TSchema>(kind: FieldKind, schema: T) => tag(kind, Type.Union([schema, Type.Null()]));

export const TIME_PATTERN = '^\\d{2}:\\d{2}:\\d{2}$';

/** Response field builders (rows as they leave the API). */
export const F = {
  uuid: () => tag('uuid', Type.String({ format: 'uuid' })),
  uuidOrNull: () => orNull('uuid', Type.String({ format: 'uuid' })),
  text: (opts: { description?: string; examples?: unknown[] } = {}) => tag('text', Type.String(opts)),
  textOrNull: (opts: { description?: string; examples?: unknown[] } = {}) => orNull('text', Type.String(opts)),
  number: (opts: { description?: string } = {}) => tag('number', Type.Number(opts)),
  numberOrNull: (opts: { description?: string } = {}) => orNull('number', Type.Number(opts)),
  integer: () => tag('integer', Type.Integer({ format: 'int32' })),
  integerOrNull: () => orNull('integer', Type.Integer({ format: 'int32' })),
  boolean: () => tag('boolean', Type.Boolean()),
  booleanOrNull: () => orNull('boolean', Type.Boolean()),
  date: () => tag('date', Type.String({ format: 'date', examples: ['2026-11-21'] })),
  dateOrNull: () => orNull('date', Type.String({ format: 'date', examples: ['2026-11-21'] })),
  time: () => tag('time', Type.String({ pattern: TIME_PATTERN, examples: ['14:30:00'] })),
  timestamp: () => tag('timestamp', Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] })),
  timestampOrNull: () => orNull('timestamp', Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] })),
  textArrayOrNull: () => orNull('text_array', Type.Array(Type.String())),
};

/** The kind a field schema was built with (see F). */
export function fieldKind(schema: TSchema): FieldKind {
  const kind = (schema as { 'x-balcao-type'?: FieldKind })['x-balcao-type'];
  return kind ?? 'json';
}

export const isNullable = (schema: TSchema): boolean => Array.isArray(schema.anyOf) && schema.anyOf.some((s: TSchema) => s.type === 'null');
