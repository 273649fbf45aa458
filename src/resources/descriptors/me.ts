// GET /v1/me: the calling key and its account (SPEC 2.11). No scope, no module.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { MODULES } from '../../domain/modules.ts';
import { itemEnvelope, itemEnvelopeSchema } from '../../http/envelope.ts';
import type { AuthContext } from '../../domain/tenant.ts';
import type { LiveLimits, RateLimiter } from '../../http/rate-limit.ts';

const LayerStatusSchema = Type.Object({
  limit: Type.Integer({ format: 'int32', description: 'Ceiling of the layer.' }),
  remaining: Type.Integer({ format: 'int32', minimum: 0, description: 'Requests left in the current window.' }),
  reset: Type.Integer({ format: 'int32', minimum: 0, description: 'Seconds until the window restarts.' }),
});

export const MeSchema = Type.Object(
  {
    team_id: Type.String({ format: 'uuid' }),
    team_name: Type.Union([Type.String(), Type.Null()]),
    key_id: Type.String({ format: 'uuid' }),
    key_name: Type.String(),
    key_last4: Type.String({ minLength: 4, maxLength: 4, description: 'Last four characters of the key.' }),
    key_prefix: Type.Union([Type.Literal('live'), Type.Literal('test')]),
    scopes: Type.Array(Type.String(), { examples: [['customers:write', 'sales:read']] }),
    plan_code: Type.String({ examples: ['pro'] }),
    modules: Type.Array(Type.String({ enum: [...MODULES] }), { description: 'Enabled modules.' }),
    rate_limits: Type.Object({
      burst_per_second: Type.Integer({ format: 'int32' }),
      requests_per_minute_read: Type.Integer({ format: 'int32' }),
      requests_per_minute_write: Type.Integer({ format: 'int32' }),
      requests_per_day_total: Type.Integer({ format: 'int32' }),
    }),
    rate_limit_status: Type.Object(
      { burst: LayerStatusSchema, read: LayerStatusSchema, write: LayerStatusSchema, day: LayerStatusSchema },
      {
        description:
          'Each rate layer as it stands after this request was counted, from the store the limiter uses (shared through Redis ' +
          'across instances): `burst` (per second), `read` and `write` (per minute), `day`. Reading it counts nothing more.',
      },
    ),
  },
  { $id: 'Me', title: 'Me' },
);

export type Me = Static<typeof MeSchema>;

export function describeKey(auth: AuthContext, live: LiveLimits): Me {
  return {
    team_id: auth.accountId,
    team_name: auth.accountName,
    key_id: auth.keyId,
    key_name: auth.keyName,
    key_last4: auth.keyLast4,
    key_prefix: auth.mode,
    scopes: [...auth.scopes],
    plan_code: auth.planCode,
    modules: MODULES.filter((m) => auth.modules.includes(m)),
    rate_limits: { ...auth.rateLimits },
    rate_limit_status: live,
  };
}

export function registerMeRoute(app: FastifyInstance, rateLimiter: RateLimiter) {
  app.get(
    '/v1/me',
    {
      config: { operationId: 'me.get' },
      schema: {
        operationId: 'me.get',
        summary: 'Describe the calling API key',
        tags: ['Me'],
        response: { 200: itemEnvelopeSchema(MeSchema) },
      },
    },
    async (request) => {
      const auth = request.auth as AuthContext;
      return itemEnvelope(request, describeKey(auth, await rateLimiter.liveLimits(auth)));
    },
  );
}
