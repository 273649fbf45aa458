// GET /v1/events (with the long poll) and GET /v1/events/{id}. Scope `events:read`; the key then
// sees only the events of resources it may read, in its own account and mode.
import { requireTenant } from '../infra/db/tenancy/tenancy.ts';
import { tenantKey } from '../domain/tenant.ts';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { typedRoutes } from '../http/typed-routes.ts';
import { errors } from '../errors/app-error.ts';
import { itemEnvelope, itemEnvelopeSchema, listEnvelope, listEnvelopeSchema } from '../http/envelope.ts';
import type { ReadRunner } from '../infra/db/replicas/read-router.ts';
import { filterParam, idParamsSchema, listQuerySchema, sparseSchema } from '../query/schemas.ts';
import type { ChangeCapture } from './capture/change-capture.ts';
import type { EventBus } from './event-bus.ts';
import { MAX_HELD_PER_KEY } from './event-bus.ts';
import { eventRow } from './event-schema.ts';
import {
  EVENTS_QUERYABLE,
  type EventPage,
  getEvent,
  listEvents,
  ORIGIN_KEY_FILTER,
  ORIGIN_KEY_OPERATORS,
  RETENTION_DAYS,
  readableEventResources,
} from './list-events.ts';
import { MAX_LIST_VALUES } from '../query/plan.ts';

export const MAX_WAIT_SECONDS = 30;

/** Test-only points in a long poll, unset in production: `afterFirstLook` runs (awaited) once the
 *  first look found nothing, `held` once the request is held, so a test writes an event at exactly
 *  that moment instead of sleeping and hoping (test/events-feed.test.ts). */
export const longPollHooks: {
  afterFirstLook?: (keyId: string) => Promise<void>;
  held?: (keyId: string) => void;
} = {};

/** A read the router must send to the primary. */
const PRIMARY = null;

const guard = { resource: 'events', access: 'read' } as const;
const tags = ['Events'];

function parseWait(query: unknown): number {
  const raw = (query as Record<string, unknown> | null)?.wait;
  if (raw === undefined || raw === '') return 0;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_WAIT_SECONDS)
    throw errors.queryInvalid('invalid_wait');
  return Number(raw);
}

function callerOf(request: FastifyRequest) {
  const { auth } = request;
  if (!auth) throw errors.internal(new Error('events route without authentication'));
  return { auth, tenant: requireTenant(request.tenant, 'read'), resources: readableEventResources(auth) };
}

function eventsQuerySchema(): TObject {
  const base = listQuerySchema(EVENTS_QUERYABLE);
  const wait = Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: MAX_WAIT_SECONDS,
      description:
        'Long poll, with `sort=created_at`: when the page would be empty, hold the request up to this many seconds until an ' +
        `event arrives, then answer as usual. At most ${MAX_HELD_PER_KEY} requests per key are held at once; more answer at once.`,
    }),
  );
  const byKey = Object.fromEntries(
    ORIGIN_KEY_OPERATORS.map((op) => [
      filterParam(ORIGIN_KEY_FILTER, op),
      Type.Optional(
        Type.String({
          description:
            op === 'neq'
              ? "Leaves out the events written through this API key (an id of `GET /v1/me`'s `key_id`): your own writes do not come back to you. Events made outside the API stay."
              : `Leaves out the events written through any of these API keys (a comma list, up to ${MAX_LIST_VALUES}). Events made outside the API stay.`,
        }),
      ),
    ]),
  );
  return Type.Object({ ...base.properties, ...byKey, wait } as Record<string, TSchema>, { additionalProperties: true });
}

export function registerEventRoutes(app: FastifyInstance, read: ReadRunner, bus: EventBus, capture: ChangeCapture): void {
  const list = { whole: listEnvelopeSchema(eventRow), sparse: listEnvelopeSchema(sparseSchema(eventRow)) };
  const routes = typedRoutes(app);
  // Typed as any schema: the handler answers the record as read (a Row), which the serializer checks.
  const eventItem: TSchema = itemEnvelopeSchema(eventRow);

  routes.get(
    '/v1/events',
    {
      config: { operationId: 'events.list', ...guard },
      schema: {
        operationId: 'events.list',
        summary: 'List events (the change feed)',
        description:
          `Events of the last ${RETENTION_DAYS} days of the resources this key may read. With \`sort=created_at\` the page ` +
          'always carries a `next_cursor`, the last page too: store it and resume from exactly there.',
        tags,
        querystring: eventsQuerySchema(),
        response: { 200: listEnvelopeSchema(Type.Union([eventRow, sparseSchema(eventRow)])) },
      },
    },
    async (request, reply) => {
      const page = await eventPage(read, bus, capture, request, reply);
      reply
        .serializer(reply.compileSerializationSchema(page.sparse ? list.sparse : list.whole, '200'))
        .type('application/json; charset=utf-8');
      return listEnvelope(request, page.data, page.pagination);
    },
  );

  routes.get(
    '/v1/events/:id',
    {
      config: { operationId: 'events.get', ...guard },
      schema: {
        operationId: 'events.get',
        summary: 'Get one event',
        tags,
        params: idParamsSchema,
        response: { 200: eventItem },
      },
    },
    async (request) => {
      const { tenant, resources } = callerOf(request);
      await capture.caughtUp(tenantKey(tenant));
      return itemEnvelope(request, await read(request.auth?.keyId, (db) => getEvent(db, tenant, resources, request.params.id)));
    },
  );
}

/** The page a list of events answers; with `wait`, a page that would be empty waits for an event first. */
async function eventPage(
  read: ReadRunner,
  bus: EventBus,
  capture: ChangeCapture,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<EventPage> {
  const { auth, tenant, resources } = callerOf(request);
  const wait = parseWait(request.query);
  const channel = tenantKey(tenant);
  // A write answered before this read is in the feed: its events are made once capture has passed its commit.
  await capture.caughtUp(channel);
  const look = (keyId: string | null) => read(keyId, (db) => listEvents(db, tenant, resources, request.query));
  // Listening starts before the first look (in memory, no query): an event committed after the look
  // but before the wait still wakes the poll, instead of being missed until the deadline.
  const subscription = wait > 0 ? bus.subscribe(channel) : undefined;
  try {
    let page = await look(auth.keyId);
    // A replica may not have replayed an event committed just before: a long poll must not wait for the next one.
    if (wait > 0 && page.forward && page.data.length === 0 && read.stalenessMs > 0 && bus.eventWithin(channel, read.stalenessMs))
      page = await look(PRIMARY);
    if (!subscription || !page.forward || page.data.length > 0) return page;
    await longPollHooks.afterFirstLook?.(auth.keyId);
    if (!bus.hold(auth.keyId)) return page;
    const hold = async (): Promise<EventPage> => {
      const abort = new AbortController();
      const onClose = () => abort.abort();
      reply.raw.once('close', onClose);
      try {
        longPollHooks.held?.(auth.keyId);
        const deadline = Date.now() + wait * 1000;
        // An event of another resource wakes us too: then look again until the time is up.
        while (page.data.length === 0 && (await subscription.next(deadline - Date.now(), abort.signal)))
          // Woken by a commit on the primary that a replica may not have replayed yet: look there.
          page = await look(PRIMARY);
        return page;
      } finally {
        reply.raw.off('close', onClose);
        bus.release(auth.keyId);
      }
    };
    // With traces on, the wait is a span of the request's: how long it held, and whether an event ended it.
    const tracing = request.server.tracing;
    if (!tracing) return await hold();
    return await tracing.childSpan('events long poll', { 'balcao.events.wait_seconds': wait }, async (span) => {
      const held = await hold();
      span?.setAttribute('balcao.events.returned', held.data.length);
      return held;
    });
  } finally {
    subscription?.close();
  }
}
