// Routes typed from their TypeBox schemas (params, querystring, body) through Fastify's type
// provider, so handlers read `request.params.id` or `request.body` without casts.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';

export const typedRoutes = (app: FastifyInstance) => app.withTypeProvider<TypeBoxTypeProvider>();
export type TypedApp = ReturnType<typeof typedRoutes>;
