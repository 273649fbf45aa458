// A record's version as the statements that read or change it select it: updated_at with its
// microseconds (src/resources/etag.ts makes the ETag of it).
import { type RawBuilder, sql } from 'kysely';

/** Alias of the version column in a statement's answer; never part of a response body. */
export const VERSION_KEY = '__version';

/** updated_at with its microseconds, as text independent of the session's DateStyle (null before the first change). */
export const versionSql = (): RawBuilder<string | null> =>
  sql<string | null>`to_char(${sql.ref('updated_at')} at time zone 'UTC', 'YYYYMMDDHH24MISSUS')`;
