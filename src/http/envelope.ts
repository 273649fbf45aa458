// Success envelopes (SPEC part 1) and their schemas.
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';

export const MetaSchema = Type.Object({ request_id: Type.String() }, { additionalProperties: false });

export const PaginationSchema = Type.Object(
  {
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` to get the next page; null on the last page.' }),
    has_more: Type.Boolean(),
    limit: Type.Integer({ format: 'int32', minimum: 1, description: 'Effective page size.' }),
  },
  { additionalProperties: false },
);

export interface Pagination {
  next_cursor: string | null;
  has_more: boolean;
  limit: number;
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
