// JSON Schemas describing the read API for route declarations and OpenAPI: the list query
// (documentation only — parse.ts/plan.ts are the validators), path params and record shapes.
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { QueryableResource } from './contract.ts';
import { COUNT_KINDS, DEFAULT_LIMIT, DEFAULT_SORT, EXACT_COUNT_BELOW, MAX_LIMIT, MAX_LIST_VALUES } from './plan.ts';
import { rowMeta } from './row-meta.ts';
import { thousands } from '../schemas/plain-text.ts';

const OPERATOR_DOC: Record<string, string> = {
  eq: 'equal to',
  neq: 'not equal to (nulls included)',
  gt: 'greater than',
  gte: 'greater than or equal to',
  lt: 'less than',
  lte: 'less than or equal to',
  in: `one of a comma list (up to ${MAX_LIST_VALUES})`,
  nin: `none of a comma list (up to ${MAX_LIST_VALUES}; nulls included)`,
  ilike: 'case-insensitive pattern, `%` is the wildcard',
  is_null: '`true`: only nulls; `false`: only non-nulls',
};

/** The name of a filter parameter, as clients write it. */
export const filterParam = (field: string, op: string): string => `filter[${field}][${op}]`;

/** Querystring of `GET /v1/<resource>`: one property per parameter and per allowed filter. */
export function listQuerySchema(d: QueryableResource): TObject {
  const fields = rowMeta(d.row).fields;
  const properties: Record<string, TSchema> = {
    limit: Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: MAX_LIMIT,
      default: DEFAULT_LIMIT,
      description: `Page size, 1..${MAX_LIMIT}; other numbers are clamped, anything else is a 422 \`invalid_limit\`.`,
    }),
    cursor: Type.String({ description: '`pagination.next_cursor` of the previous page, with the same query otherwise.' }),
    sort: Type.String({
      enum: d.sorts.flatMap((s) => [s, `-${s}`]),
      default: DEFAULT_SORT,
      description: 'One field; a `-` prefix sorts descending. Ties are broken by id.',
    }),
    fields: Type.String({ description: `Comma list of fields to return (\`id\` always is): ${fields.join(', ')}.` }),
    count: Type.String({
      enum: [...COUNT_KINDS],
      description: `Adds \`pagination.total_count\` (records matching the filters, whatever the cursor) and \`pagination.total_count_kind\`. \`exact\` counts them; \`estimated\` counts up to ${thousands(EXACT_COUNT_BELOW)} and takes PostgreSQL\u2019s planner estimate past that. Without it nothing is counted. A count past the statement timeout is a 503 \`service_unavailable\` naming it.`,
    }),
  };
  const includes = Object.keys(d.includes ?? {});
  if (includes.length > 0)
    properties.include = Type.String({
      description: `Comma list of related data to embed in every record of the page, as GET by id does: ${includes.join(', ')}. One read per include for the whole page; works with \`fields\`, filters and cursors. Unknown values are ignored.`,
    });
  for (const [field, ops] of Object.entries(d.filters)) {
    for (const op of ops) {
      const description = `Filter: \`${field}\` ${OPERATOR_DOC[op]}${field === 'id' && op !== 'eq' && op !== 'neq' ? ' (UUID order: bytewise, the order of the lowercase text)' : ''}.`;
      properties[filterParam(field, op)] =
        op === 'is_null' ? Type.String({ enum: ['true', 'false'], description }) : Type.String({ description });
    }
  }
  return optionalObject(properties);
}

/** Nothing in a query string is required: the list language refuses bad values itself. */
const optionalObject = (properties: Record<string, TSchema>): TObject =>
  Type.Object(Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, Type.Optional(v)])), { additionalProperties: true });

/** Querystring of `GET /v1/<resource>/{id}`. */
export function itemQuerySchema(d: QueryableResource): TObject {
  const properties: Record<string, TSchema> = {
    fields: Type.String({ description: `Comma list of fields to return (\`id\` always is): ${rowMeta(d.row).fields.join(', ')}.` }),
  };
  const includes = Object.keys(d.includes ?? {});
  if (includes.length > 0)
    properties.include = Type.String({
      description: `Comma list of related data to embed: ${includes.join(', ')}. Unknown values are ignored.`,
    });
  return optionalObject(properties);
}

export const idParamsSchema = Type.Object({
  id: Type.String({ format: 'uuid', maxLength: 36, description: 'Record id; anything else is a 404.' }),
});

/** A record as GET by id returns it: the row plus each include, present only when requested. */
export function recordSchema(d: QueryableResource): TObject {
  const properties: Record<string, TSchema> = { ...d.row.properties };
  for (const [name, inc] of Object.entries(d.includes ?? {})) {
    properties[name] = Type.Optional(inc.cardinality === 'many' ? Type.Array(inc.item) : Type.Union([inc.item, Type.Null()]));
  }
  return Type.Object(properties, { title: d.row.title });
}

/** The same shape with every field but `id` optional: what a `fields` projection returns. */
export function sparseSchema(row: TObject): TObject {
  const properties: Record<string, TSchema> = {};
  for (const [name, schema] of Object.entries(row.properties))
    properties[name] = name === 'id' || !row.required?.includes(name) ? schema : Type.Optional(schema);
  return Type.Object(properties, {
    title: `${row.title}Projection`,
    description: `${row.title} narrowed by \`fields\`: \`id\` and the requested fields only.`,
  });
}

/** What a read route documents for one record: the whole record, or a `fields` projection of it. */
export const documentedRecord = (full: TObject): TSchema => Type.Union([full, sparseSchema(full)]);
