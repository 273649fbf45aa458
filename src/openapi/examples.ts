// Example values synthesized from the schemas themselves (their `examples`, formats and bounds), with leaf
// values by field name (field-examples.ts), so every example in the document is derived, valid and never a
// hand-kept copy of a shape.
import { EXAMPLE_IDS, FIELD_EXAMPLES, ID_FIELD_EXAMPLES } from './field-examples.ts';

type Schema = Record<string, any>;

export interface ExampleOptions {
  /** Resolves `#/components/schemas/X` references. */
  resolve: (ref: string) => Schema | undefined;
  /** `request`: the required fields and those with an example (the minimal body); `complete`: every field of
   *  a request; `response`: every field. */
  mode: 'request' | 'complete' | 'response';
}

/** Where a value sits: its property name and the title of the object holding it, to pick a field's example. */
interface Place {
  name?: string;
  owner?: string;
}

const FORMAT_EXAMPLES: Record<string, unknown> = {
  uuid: EXAMPLE_IDS.record,
  date: '2026-11-21',
  'date-time': '2026-11-21T10:00:00.000Z',
  email: 'maria.silva@example.com',
  uri: 'https://example.com/',
};

/** The example of a field by name, qualified by its object's title first; undefined when the table has none. */
function fieldExample({ name, owner }: Place): unknown {
  if (!name) return undefined;
  const qualified = owner ? FIELD_EXAMPLES[`${owner}.${name}`] : undefined;
  return qualified ?? FIELD_EXAMPLES[name];
}

const MAX_DEPTH = 12;

export function exampleOf(schema: Schema | undefined, options: ExampleOptions, depth = 0, place: Place = {}): unknown {
  if (!schema || depth > MAX_DEPTH) return undefined;
  if (typeof schema.$ref === 'string') return exampleOf(options.resolve(schema.$ref), options, depth + 1, place);
  // A field the table names takes its value there when its schema only says what kind of value it is.
  const byName = fieldExample(place);
  if (byName !== undefined && (byName === null ? allowsNull(schema) : schema.enum === undefined && fitsType(schema, byName))) return byName;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum.find((v: unknown) => v !== null) ?? schema.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) {
      const branches: Schema[] = schema[key];
      const nonNull = branches.find((b) => b.type !== 'null');
      return nonNull ? exampleOf(nonNull, options, depth + 1, place) : null;
    }
  }
  if (Array.isArray(schema.allOf)) {
    let merged: unknown;
    for (const part of schema.allOf as Schema[]) {
      const value = exampleOf(part, options, depth + 1, place);
      merged = isPlainObject(merged) && isPlainObject(value) ? { ...merged, ...value } : (value ?? merged);
    }
    return merged;
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return objectExample(schema, options, depth);
    case 'array': {
      const item = exampleOf(schema.items, options, depth + 1, place);
      return item === undefined ? [] : Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'string':
      return stringExample(schema, place);
    case 'integer':
    case 'number':
      return numberExample(schema, type);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return schema.properties ? objectExample(schema, options, depth) : undefined;
  }
}

function objectExample(schema: Schema, options: ExampleOptions, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const required = new Set<string>(schema.required ?? []);
  for (const [name, property] of Object.entries<Schema>(schema.properties ?? {})) {
    if (options.mode === 'request' && !required.has(name) && !hasOwnExample(property, options)) continue;
    const value = exampleOf(property, options, depth + 1, { name, owner: typeof schema.title === 'string' ? schema.title : undefined });
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function hasOwnExample(schema: Schema, options: ExampleOptions): boolean {
  const target = typeof schema.$ref === 'string' ? options.resolve(schema.$ref) : schema;
  return Boolean(target && ((Array.isArray(target.examples) && target.examples.length > 0) || target.example !== undefined));
}

function stringExample(schema: Schema, place: Place): string {
  if (schema.format === 'uuid' && place.name && ID_FIELD_EXAMPLES[place.name]) return ID_FIELD_EXAMPLES[place.name] as string;
  const byFormat = FORMAT_EXAMPLES[schema.format as string];
  if (typeof byFormat === 'string') return byFormat;
  const byName = fieldExample(place);
  if (typeof byName === 'string' && byName.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY)) return byName;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  return 'string'.padEnd(min, 'x').slice(0, max);
}

function numberExample(schema: Schema, type: 'integer' | 'number'): number {
  if (typeof schema.default === 'number') return schema.default;
  let value = typeof schema.minimum === 'number' ? schema.minimum : 0;
  if (typeof schema.exclusiveMinimum === 'number') value = Math.max(value, schema.exclusiveMinimum + 1);
  if (type === 'integer' && value === 0 && schema.minimum === undefined) value = 1;
  if (typeof schema.maximum === 'number') value = Math.min(value, schema.maximum);
  return value;
}

/** Whether the schema (or one of its branches) is `null`. */
const allowsNull = (schema: Schema): boolean =>
  schema.type === 'null' ||
  (Array.isArray(schema.type) && schema.type.includes('null')) ||
  [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].some((b: Schema) => b.type === 'null');

/** Whether a leaf value of the table suits a schema without `$ref` or branches that would decide otherwise. */
function fitsType(schema: Schema, value: unknown): boolean {
  const branches: Schema[] | undefined = schema.anyOf ?? schema.oneOf;
  if (branches) return branches.some((b) => b.type !== 'null' && fitsType(b, value));
  if (schema.$ref || schema.allOf || schema.const !== undefined || schema.enum !== undefined) return false;
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (typeof value === 'string')
    return (
      types.includes('string') &&
      (!schema.pattern || new RegExp(schema.pattern, 'u').test(value)) &&
      value.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY)
    );
  if (typeof value === 'number') return types.includes('number') || (types.includes('integer') && Number.isInteger(value));
  return false;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
