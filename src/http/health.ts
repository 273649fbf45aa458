// Liveness and readiness for operators and load balancers. Public, not rate-limited per key.
// Readiness pings the database (its loss is a 503) and reports the rate-limit store, which
// fails open (DECISIONS B.16): a degraded Redis is reported but does not make the instance unready.
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../infra/db/database.ts';
import type { RateLimiter } from './rate-limit.ts';

const ReadinessSchema = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  database: Type.Object({ engine: Type.String(), healthy: Type.Boolean() }),
  rate_limit_store: Type.Object({ store: Type.String(), healthy: Type.Boolean() }),
});

export function registerHealthRoutes(app: FastifyInstance, database: Database, rateLimiter: RateLimiter) {
  app.get('/health/live', { config: { operationId: 'health.live', public: true }, schema: { hide: true } as object }, async () => ({
    status: 'ok',
  }));
  app.get(
    '/health/ready',
    {
      config: { operationId: 'health.ready', public: true },
      schema: { hide: true, response: { 200: ReadinessSchema, 503: ReadinessSchema } } as object,
    },
    async (_request, reply) => {
      let healthy = true;
      try {
        await sql`SELECT 1`.execute(database.db);
      } catch {
        healthy = false;
      }
      const body = {
        status: healthy ? ('ready' as const) : ('unavailable' as const),
        database: { engine: database.engine, healthy },
        rate_limit_store: rateLimiter.status(),
      };
      return reply.code(healthy ? 200 : 503).send(body);
    },
  );
}
