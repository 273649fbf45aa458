// TypeBox spells a nullable field `anyOf: [T, {type: 'null'}]`. Both the OpenAPI document and the
// response serializers read it better as `type: [T, 'null']`: renderers and generators see a plain
// nullable field, and fast-json-stringify serializes a type list with a `typeof` test where an
// `anyOf` costs an Ajv validation per field and row (docs/performance.md).
import { mapSubschemas } from './subschemas.ts';

type Json = Record<string, any>;

const isLiteral = (b: Json) =>
  b.const !== undefined && typeof b.type === 'string' && Object.keys(b).every((k) => k === 'const' || k === 'type');

/**
 * `anyOf: [{type: T, …}, {type: 'null'}]` → `{type: [T, 'null'], …}`, the same set of values; a
 * union of literals becomes an `enum`. An `enum`/`const` gains `null` so null stays valid.
 * Rewrites `schema` in place where it can, so pass a copy of a schema that others hold.
 */
export function simplifyNullable(schema: Json): Json {
  mapSubschemas(schema, simplifyNullable);
  const branches = schema.anyOf;
  // A union of literals (TypeBox `Union([Literal('live'), Literal('test')])`) is an enum.
  if (Array.isArray(branches) && branches.length > 1 && branches.every((b: Json) => isLiteral(b) && b.type === branches[0].type)) {
    const { anyOf: _anyOf, ...outer } = schema;
    return { ...outer, type: branches[0].type, enum: branches.map((b: Json) => b.const) };
  }
  if (!Array.isArray(branches) || branches.length !== 2) return schema;
  const nullAt = branches.findIndex((b: Json) => b.type === 'null' && Object.keys(b).length === 1);
  const other: Json = branches[1 - nullAt];
  if (nullAt < 0 || typeof other?.type !== 'string' || other.$ref) return schema;
  const { anyOf: _anyOf, ...outer } = schema;
  if (Object.keys(outer).some((k) => k in other && !['description', 'examples', 'title'].includes(k))) return schema;
  const merged: Json = { ...outer, ...other, type: [other.type, 'null'] };
  if (outer.description) merged.description = outer.description;
  if (merged.const !== undefined) {
    merged.enum = [merged.const];
    delete merged.const;
  }
  if (Array.isArray(merged.enum) && !merged.enum.includes(null)) merged.enum = [...merged.enum, null];
  return merged;
}
