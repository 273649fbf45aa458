// The event object as the API returns it and webhooks deliver it (one TypeBox schema for the
// list, the item, the webhook payloads in OpenAPI and the query language's field kinds).
import { type TSchema, Type } from '@sinclair/typebox';
import { F } from '../schemas/common.ts';
import { EVENT_TYPES } from './event-types.ts';

/** The `data` of an event: the record after the write, and what an update changed. */
export const eventDataSchema = (object: TSchema) =>
  Type.Object(
    {
      object,
      previous_attributes: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
        description: 'On `*.updated`: the old values of the fields the write changed (`updated_at` aside). Null otherwise.',
      }),
    },
    { additionalProperties: false },
  );

export const eventRow = Type.Object(
  {
    id: F.uuid(),
    type: Object.assign(Type.String({ enum: [...EVENT_TYPES], description: '`<object>.<created|updated|deleted>`' }), {
      'x-balcao-type': 'text' as const,
    }),
    created_at: F.timestamp(),
    data: eventDataSchema(
      Type.Record(Type.String(), Type.Unknown(), { description: 'The record exactly as GET returns it after the write.' }),
    ),
    request_id: F.textOrNull({ description: 'The `X-Request-Id` of the write through the API; null for other writers.' }),
    origin: Type.Unsafe<{ type: 'api' | 'outside'; key_id?: string | null; request_id?: string | null }>(
      Type.Object(
        {
          type: Type.String({
            enum: ['api', 'outside'],
            description: "`api`: a write through the API (a batch operation included); `outside`: any other writer of the account's data.",
          }),
          key_id: Type.Optional(Type.Union([F.uuid(), Type.Null()], { description: 'With `api`: the id of the API key that wrote.' })),
          request_id: Type.Optional(
            Type.Union([Type.String(), Type.Null()], { description: 'With `api`: the `X-Request-Id` of the write.' }),
          ),
        },
        { additionalProperties: false, description: 'Who made the change.' },
      ),
    ),
  },
  { title: 'Event' },
);
