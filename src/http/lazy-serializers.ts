// Response serializers compiled on first use: Fastify's own fast-json-stringify compiler,
// deferred from start-up to each route's first response of each status.
import SerializerSelector from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

const compileNow: SerializerFactory = SerializerSelector();

/**
 * The serializer builder for Fastify's `schemaController` option. Compiling every route's
 * response schemas at `listen` was a fifth of the time to start (docs/performance.md); a route
 * now pays for its own schema once, on the first response that needs it.
 */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = compileNow(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => {
      serialize ??= compile(route);
      return serialize(doc);
    };
  };
};
