// Walking a JSON Schema's children, for the passes that rewrite schemas (the OpenAPI document's
// naming and nullable spelling, and the serializers' copy of the same spelling).

type Schema = Record<string, any>;

/** Keys whose value is one subschema / a list / a map of subschemas (JSON Schema 2020-12). */
const ONE = ['items', 'not', 'if', 'then', 'else', 'contains', 'additionalProperties', 'unevaluatedProperties', 'propertyNames'];
const LIST = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', '$defs'];

/** Applies `fn` to every direct subschema of `schema`, replacing each with the result. */
export function mapSubschemas(schema: Schema, fn: (child: Schema) => Schema): void {
  for (const key of ONE) if (isSchema(schema[key])) schema[key] = fn(schema[key]);
  for (const key of LIST) if (Array.isArray(schema[key])) schema[key] = schema[key].map((c: unknown) => (isSchema(c) ? fn(c) : c));
  for (const key of MAP) {
    if (!isSchema(schema[key])) continue;
    for (const [name, child] of Object.entries(schema[key])) if (isSchema(child)) schema[key][name] = fn(child as Schema);
  }
}

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
