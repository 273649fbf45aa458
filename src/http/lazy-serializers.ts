// Response serializers compiled on first use: Fastify's own fast-json-stringify compiler,
// deferred from start-up to each route's first response of each status, over a copy of the
// response schema with nullable fields spelled as type lists.
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { simplifyNullable } from '../schemas/nullable.ts';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

const compileNow: SerializerFactory = SerializerSelector();

/**
 * The serializer builder for Fastify's `schemaController` option. Compiling every route's
 * response schemas at `listen` was a fifth of the time to start (docs/performance.md); a route
 * now pays for its own schema once, on the first response that needs it.
 *
 * fast-json-stringify serializes `anyOf` by running an Ajv validator per branch, per field and
 * row; `type: [T, 'null']` is the same set of values serialized behind a `typeof` test. The copy
 * keeps the route's own schema (validation, OpenAPI) as it was.
 */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = compileNow(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => {
      serialize ??= compile({ ...route, schema: simplifyNullable(JSON.parse(JSON.stringify(route.schema))) });
      return serialize(doc);
    };
  };
};
