// Shapes that mean the same but that the /docs renderer (Scalar 1.46) refuses as "document validation errors":
// inside `components.schemas`, a `$ref` within `anyOf`/`oneOf`/`allOf`, and a schema with no `type`, composition
// or reference (the "any value" `{}` of an `additionalProperties`). Rewritten to what it accepts, with the same
// set of values: a nullable reference becomes an inline copy of its target with `null` added to its `type`, and
// `additionalProperties: {}` becomes `true`. The named component stays, for the other uses and for generators.
import { mapSubschemas } from '../schemas/subschemas.ts';

type Json = Record<string, any>;

const isNull = (b: Json) => b.type === 'null' && Object.keys(b).length === 1;
const isEmpty = (s: unknown) => typeof s === 'object' && s !== null && !Array.isArray(s) && Object.keys(s).length === 0;

function rewrite(schema: Json, resolve: (ref: string) => Json | undefined): Json {
  mapSubschemas(schema, (child) => rewrite(child, resolve));
  if (isEmpty(schema.additionalProperties)) schema.additionalProperties = true;
  const branches: Json[] | undefined = schema.anyOf;
  if (!Array.isArray(branches) || branches.length !== 2) return schema;
  const nullAt = branches.findIndex(isNull);
  const ref = branches[1 - nullAt]?.$ref;
  const target = typeof ref === 'string' ? resolve(ref) : undefined;
  if (nullAt < 0 || !target || typeof target.type !== 'string') return schema;
  const { anyOf: _anyOf, ...outer } = schema;
  return { ...structuredClone(target), ...outer, type: [target.type, 'null'] };
}

/** Rewrites the component schemas in place. */
export function rendererCompatible(schemas: Json): void {
  const resolve = (ref: string) => schemas[ref.replace('#/components/schemas/', '')];
  for (const [name, schema] of Object.entries<Json>(schemas)) schemas[name] = rewrite(schema, resolve);
}
