// Example values synthesized from the schemas themselves (their `examples`, formats and bounds),
// so every example in the document is derived, valid and never a hand-kept copy of a shape.
type Schema = Record<string, any>;

export interface ExampleOptions {
  /** Resolves `#/components/schemas/X` references. */
  resolve: (ref: string) => Schema | undefined;
  /** Request bodies show the required fields and those with an example; responses show every field. */
  mode: 'request' | 'response';
}

const FORMAT_EXAMPLES: Record<string, unknown> = {
  uuid: '3f2b8c1e-9d4a-4e7b-8a61-5c0d2e9f7b13',
  date: '2026-11-21',
  'date-time': '2026-11-21T10:00:00.000Z',
  email: 'cliente@example.com',
  uri: 'https://example.com/',
};

const MAX_DEPTH = 12;

export function exampleOf(schema: Schema | undefined, options: ExampleOptions, depth = 0): unknown {
  if (!schema || depth > MAX_DEPTH) return undefined;
  if (typeof schema.$ref === 'string') return exampleOf(options.resolve(schema.$ref), options, depth + 1);
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum.find((v: unknown) => v !== null) ?? schema.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) {
      const branches: Schema[] = schema[key];
      const nonNull = branches.find((b) => b.type !== 'null');
      return nonNull ? exampleOf(nonNull, options, depth + 1) : null;
    }
  }
  if (Array.isArray(schema.allOf)) {
    let merged: unknown;
    for (const part of schema.allOf as Schema[]) {
      const value = exampleOf(part, options, depth + 1);
      merged = isPlainObject(merged) && isPlainObject(value) ? { ...merged, ...value } : (value ?? merged);
    }
    return merged;
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return objectExample(schema, options, depth);
    case 'array': {
      const item = exampleOf(schema.items, options, depth + 1);
      return item === undefined ? [] : Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'string':
      return stringExample(schema);
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
    const value = exampleOf(property, options, depth + 1);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function hasOwnExample(schema: Schema, options: ExampleOptions): boolean {
  const target = typeof schema.$ref === 'string' ? options.resolve(schema.$ref) : schema;
  return Boolean(target && ((Array.isArray(target.examples) && target.examples.length > 0) || target.example !== undefined));
}

function stringExample(schema: Schema): string {
  const byFormat = FORMAT_EXAMPLES[schema.format as string];
  if (typeof byFormat === 'string') return byFormat;
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

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
