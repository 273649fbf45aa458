// Digests (issue 49): GET /v1/{resource}/digest proves a client's copy equal to ours without paging through it.
// A level names a prefix of the ids' lowercase text; its answer has, per child prefix (one hex digit more), how
// many matching records start with it and the SHA-256 of their lines `<id>:<updated_at as served>\n` in
// ascending id order. A client compares the 16 entries with its own, and descends only into those that differ:
// after one change, exactly one entry differs at each level. All of it is computed in one SQL statement.
import { type TObject, Type } from '@sinclair/typebox';
import type { Tenant } from '../../domain/tenant.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import type { Row } from '../../infra/db/engine/row.ts';
import { requireTenant } from '../../infra/db/tenancy/tenancy.ts';
import { digestStatement, HEX_DIGITS } from '../../query/compile.ts';
import type { QueryableResource } from '../../query/contract.ts';
import { parseQuery } from '../../query/parse.ts';
import { type FilterPlan, planFilters } from '../../query/plan.ts';
import { refuse } from '../../query/refusals.ts';
import { filterParam } from '../../query/schemas.ts';
import { tooSlow } from './read-engine.ts';

/** A level's prefix: 0 to 7 lowercase hex digits (all within the id's first group). */
export const DIGEST_PREFIX = /^[0-9a-f]{0,7}$/;
export const MAX_PREFIX_LENGTH = 7;

export interface DigestEntry {
  prefix: string;
  count: number;
  sha256: string;
}

export const DigestEntrySchema = Type.Object(
  {
    prefix: Type.String({
      pattern: '^[0-9a-f]{1,8}$',
      description: 'The level\u2019s prefix and one hex digit more: the records whose id, as lowercase text, starts with it.',
      examples: ['3a7'],
    }),
    count: Type.Integer({ format: 'int64', minimum: 1, description: 'How many matching records the prefix holds.' }),
    sha256: Type.String({
      pattern: '^[0-9a-f]{64}$',
      description:
        'Lowercase hex SHA-256 of the UTF-8 text made of one line per record, in ascending id order: `<id>:<updated_at as the API serves it, or empty when null>\\n`.',
      examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
    }),
  },
  { title: 'DigestEntry', additionalProperties: false },
);

export const DigestMetaSchema = Type.Object(
  {
    request_id: Type.String(),
    prefix: Type.String({ description: 'The level answered (the `prefix` sent, or empty).', examples: ['3a'] }),
  },
  { additionalProperties: false },
);

export const digestEnvelopeSchema = Type.Object({
  data: Type.Array(DigestEntrySchema, {
    maxItems: 16,
    description: 'One entry per child prefix holding at least one matching record, in ascending order of prefix.',
  }),
  meta: DigestMetaSchema,
});

/** Querystring of the digest: `prefix` and the list's filters (documentation; the planner validates). */
export function digestQuerySchema(d: QueryableResource, listQuery: TObject): TObject {
  const properties: TObject['properties'] = {
    prefix: Type.Optional(
      Type.String({
        pattern: DIGEST_PREFIX.source,
        maxLength: MAX_PREFIX_LENGTH,
        default: '',
        description: 'The level: 0 to 7 lowercase hex digits (default empty, the top). Anything else is a 422 `invalid_prefix`.',
      }),
    ),
  };
  for (const [field, ops] of Object.entries(d.filters))
    for (const op of ops) {
      const name = filterParam(field, op);
      const schema = listQuery.properties[name];
      if (schema) properties[name] = schema;
    }
  return Type.Object(properties, { additionalProperties: true });
}

/** The prefix of a digest request, or a 422 `validation` (`invalid_prefix`). */
function digestPrefix(query: unknown): string {
  const raw = query && typeof query === 'object' ? (query as Record<string, unknown>).prefix : undefined;
  if (raw === undefined) return '';
  if (typeof raw !== 'string' || !DIGEST_PREFIX.test(raw)) throw refuse.prefix();
  return raw;
}

export async function digestRecords(
  db: Db,
  d: QueryableResource,
  tenant: Tenant | null,
  query: unknown,
): Promise<{ prefix: string; entries: DigestEntry[] }> {
  const scope = requireTenant(tenant, 'read');
  const prefix = digestPrefix(query);
  const filters = planFilters(d, parseQuery(query));
  try {
    if (prefix === '') return { prefix, entries: await topLevel(db, d, filters, scope) };
    const [row] = (await db.executeQuery(digestStatement(db, d, filters, prefix, scope))).rows as Row[];
    const entries = [...HEX_DIGITS].flatMap((hex) => {
      const count = Number(row?.[`count_${hex}`] ?? 0);
      return count > 0 ? [{ prefix: `${prefix}${hex}`, count, sha256: String(row?.[`sha256_${hex}`]) }] : [];
    });
    return { prefix, entries };
  } catch (err) {
    throw tooSlow(err, 'digest', 'Ask for a longer prefix, or narrow the filters.');
  }
}

/** How many of the top level's statements run at once: a digest of a large account should not take the pool. */
const TOP_LEVEL_CONCURRENCY = 2;

/**
 * The top level reads every matching record: on a large account one statement would run past the statement
 * timeout (a million customers take several seconds), so each of its 16 entries is a statement of its own, over
 * one sixteenth of the ids, two at a time. Deeper levels are one statement (a sixteenth of the records or less).
 */
async function topLevel(db: Db, d: QueryableResource, filters: readonly FilterPlan[], scope: Tenant): Promise<DigestEntry[]> {
  const found: (DigestEntry | null)[] = new Array(HEX_DIGITS.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < HEX_DIGITS.length) {
      const n = next++;
      const hex = HEX_DIGITS[n] as string;
      const [row] = (await db.executeQuery(digestStatement(db, d, filters, hex, scope, true))).rows as Row[];
      const count = Number(row?.count ?? 0);
      if (count > 0) found[n] = { prefix: hex, count, sha256: String(row?.sha256) };
    }
  };
  await Promise.all(Array.from({ length: TOP_LEVEL_CONCURRENCY }, worker));
  return found.filter((e): e is DigestEntry => e !== null);
}
