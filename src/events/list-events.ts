// Reads of the change feed through the query language (plan → keyset SQL): the caller's tenant,
// the resources its key may read (scope and module), the 30-day retention. A forward list always
// returns a cursor, so a sync job resumes exactly where it stopped, and may long-poll for more.
import { sql } from 'kysely';
import { errors } from '../errors/app-error.ts';
import type { AuthContext, Tenant } from '../domain/tenant.ts';
import type { Pagination } from '../http/envelope.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { selectScoped } from '../infra/db/tenancy/tenancy.ts';
import { CURSOR_KEY, compileList, listStatement, type Query } from '../query/compile.ts';
import type { QueryableResource } from '../query/contract.ts';
import { encodeCursor } from '../query/cursor.ts';
import { outputRow } from '../query/output.ts';
import { parseQuery } from '../query/parse.ts';
import { MAX_LIST_VALUES, planList } from '../query/plan.ts';
import { refuse } from '../query/refusals.ts';
import { rowMeta } from '../query/row-meta.ts';
import { resourceByName } from '../resources/registry.ts';
import { isUuid } from '../schemas/formats.ts';
import { EVENT_RESOURCES } from './event-types.ts';
import { eventRow } from './event-schema.ts';
import type { Row } from '../infra/db/engine/row.ts';

export const RETENTION_DAYS = 30;

/** The feed as the query language sees it (events belong to no module and no scope resource of their own). */
export const EVENTS_QUERYABLE: QueryableResource = {
  name: 'events',
  table: 'events',
  row: eventRow,
  filters: { type: ['eq', 'in'], created_at: ['gt', 'gte', 'lt', 'lte'] },
  sorts: ['created_at'],
};

/** The resources whose events this key may see: it may read them, and their module is on the contract. */
export function readableEventResources(auth: AuthContext): string[] {
  return EVENT_RESOURCES.filter((r) => {
    const module = resourceByName(r)?.module;
    return auth.granted.has(`${r}:read`) && module !== undefined && auth.modules.includes(module);
  });
}

/** The events descriptor narrowed to the visible resources (literal values from a fixed list): one object per set of
 *  resources, since the statement cache keeps a list's SQL text per descriptor. */
const narrowed = new Map<string, QueryableResource>();
const visibleEvents = (resources: readonly string[]): QueryableResource => {
  const name = resources.join(',');
  let d = narrowed.get(name);
  if (!d) {
    d = { ...EVENTS_QUERYABLE, where: { resource: [...resources] } };
    narrowed.set(name, d);
  }
  return d;
};

const retentionCutoff = () => sql`now() - interval '${sql.raw(String(RETENTION_DAYS))} days'`;
const withinRetention = (q: Query): Query => q.where('created_at', '>', retentionCutoff());

/** Where a forward walk over an empty feed starts: before every event. */
const START_CURSOR = encodeCursor('created_at', '1970-01-01T00:00:00.000000Z', '00000000-0000-0000-0000-000000000000');

export interface EventPage {
  data: Row[];
  pagination: Pagination;
  sparse: boolean;
  /** A forward (`sort=created_at`) list: the only kind a long poll may hold. */
  forward: boolean;
}

/** The filter on the API key an event was written through: a column of the table, not a field of the event. */
export const ORIGIN_KEY_FILTER = 'origin_key_id';
export const ORIGIN_KEY_OPERATORS = ['neq', 'nin'] as const;
const ORIGIN_KEY_PARAM = /^filter\[origin_key_id\](?:\[([^[\]]*)\])?$/;

/**
 * The query without its `filter[origin_key_id][neq|nin]`, and the key ids those leave out (issue 49: an integration
 * does not read back its own writes). Refused as any filter is: another operator, or a value that is not a key id.
 */
function originKeyExclusions(query: unknown): { rest: unknown; excluded: string[] } {
  if (!query || typeof query !== 'object') return { rest: query, excluded: [] };
  const rest: Row = {};
  const excluded: string[] = [];
  for (const [key, value] of Object.entries(query as Row)) {
    const match = ORIGIN_KEY_PARAM.exec(key);
    if (!match) {
      rest[key] = value;
      continue;
    }
    const op = match[1] ?? '';
    if (!(ORIGIN_KEY_OPERATORS as readonly string[]).includes(op)) throw refuse.filterOperator(ORIGIN_KEY_FILTER, op);
    const ids = typeof value === 'string' ? (op === 'nin' ? value.split(',') : [value]).map((v) => v.trim()) : [];
    if (ids.length === 0 || ids.length > MAX_LIST_VALUES || !ids.every(isUuid)) throw refuse.filterValue(ORIGIN_KEY_FILTER);
    excluded.push(...ids.map((id) => id.toLowerCase()));
  }
  return { rest, excluded };
}

export async function listEvents(db: Db, tenant: Tenant, resources: readonly string[], query: unknown): Promise<EventPage> {
  const d = visibleEvents(resources);
  const { rest, excluded } = originKeyExclusions(query);
  const plan = planList(d, parseQuery(rest));
  // Events of no key (made outside the API) are never left out: a null is not equal to any key (`neq` keeps nulls).
  const notExcluded =
    excluded.length === 0 ? undefined : sql<boolean>`(origin_key_id IS NULL OR origin_key_id NOT IN (${sql.join(excluded)}))`;
  const forward = !plan.sort.desc;
  const meta = rowMeta(eventRow);
  const given = typeof (query as Row | null)?.cursor === 'string' && (query as Row).cursor !== '' ? String((query as Row).cursor) : null;
  const rows: Row[] = [];
  if (resources.length > 0 && notExcluded) {
    // Keys left out are values the cached text could not carry: this list is built each time.
    for (const segment of compileList(db, d, plan, tenant)) {
      const need = plan.limit + 1 - rows.length;
      if (need <= 0) break;
      rows.push(...((await withinRetention(segment.where(notExcluded)).limit(sql.lit(need)).execute()) as Row[]));
    }
  } else if (resources.length > 0) {
    // The page's statements from their cached text, as a resource's list (query/compile.ts).
    for (let segment = 0; rows.length <= plan.limit; segment++) {
      const statement = listStatement(db, d, plan, tenant, segment, plan.limit + 1 - rows.length, withinRetention);
      if (!statement) break;
      rows.push(...((await db.executeQuery(statement)).rows as Row[]));
    }
  }
  const hasMore = rows.length > plan.limit;
  const page = hasMore ? rows.slice(0, plan.limit) : rows;
  const last = page[page.length - 1];
  const cursorOf = (row: Row) => encodeCursor(plan.sort.token, row[CURSOR_KEY] as string, String(row.id));
  const nextCursor = last && (hasMore || forward) ? cursorOf(last) : forward ? (given ?? START_CURSOR) : null;
  return {
    data: page.map((row) => outputRow(row, plan.fields, meta)),
    pagination: { next_cursor: nextCursor, has_more: hasMore, limit: plan.limit },
    sparse: plan.fields.length < meta.fields.length,
    forward,
  };
}

export async function getEvent(db: Db, tenant: Tenant, resources: readonly string[], id: string): Promise<Row> {
  if (!isUuid(id) || resources.length === 0) throw errors.notFound();
  const meta = rowMeta(eventRow);
  const row = (await selectScoped(db, 'events', tenant, { resource: resources })
    .select(meta.fields as string[])
    .where('id', '=', id)
    .where('created_at', '>', retentionCutoff())
    .executeTakeFirst()) as Row | undefined;
  if (!row) throw errors.notFound();
  return outputRow(row, meta.fields, meta);
}
