// Success envelopes (SPEC part 1) and their schemas.
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';

export const MetaSchema = Type.Object({ request_id: Type.String() }, { additionalProperties: false });

export const PaginationSchema = Type.Object(
  {
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` to get the next page; null on the last page.' }),
    has_more: Type.Boolean(),
    limit: Type.Integer({ format: 'int32', minimum: 1, description: 'Effective page size.' }),
    total_count: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        description: 'With `count`: how many records match the filters, whatever the cursor (every page of a walk tells it).',
      }),
    ),
    total_count_kind: Type.Optional(
      Type.Union([Type.Literal('exact'), Type.Literal('estimated')], {
        description:
          'With `count`: `exact` when counted; `estimated` when `count=estimated` met 10 000 or more records and took PostgreSQL\u2019s planner estimate.',
      }),
    ),
  },
  { additionalProperties: false },
);

export interface Pagination {
  next_cursor: string | null;
  has_more: boolean;
  limit: number;
  total_count?: number;
  total_count_kind?: 'exact' | 'estimated';
}

export const itemEnvelopeSchema = <T extends TSchema>(data: T) => Type.Object({ data, meta: MetaSchema });
export const listEnvelopeSchema = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), pagination: PaginationSchema, meta: MetaSchema });

export const itemEnvelope = <T>(request: FastifyRequest, data: T) => ({ data, meta: { request_id: request.id } });
export const listEnvelope = <T>(request: FastifyRequest, data: T[], pagination: Pagination) => ({
  data,
  pagination,
  meta: { request_id: request.id },
});
