// A record's version as the statements that read or change it select it: updated_at with its
// microseconds (src/resources/engines/etag.ts makes the ETag of it).
import { type RawBuilder, sql } from 'kysely';

/** Alias of the version column in a statement's answer; never part of a response body. */
export const VERSION_KEY = '__version';

/** updated_at with its microseconds, as text independent of the session's DateStyle (null before the first change). */
export const versionSql = (): RawBuilder<string | null> =>
  sql<string | null>`to_char(${sql.ref('updated_at')} at time zone 'UTC', 'YYYYMMDDHH24MISSUS')`;

/** Alias of the transaction's time, in the version's text, in the statement that locks a row to change it. */
export const NOW_VERSION_KEY = '__now_version';

/** now() (the transaction's start) in the version's text. */
export const nowVersionSql = (): RawBuilder<string> => sql<string>`to_char(now() at time zone 'UTC', 'YYYYMMDDHH24MISSUS')`;

const VERSION_TEXT = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{6})$/;

/** Microseconds since the epoch of a version's text. */
function versionMicros(version: string): bigint {
  const m = VERSION_TEXT.exec(version);
  if (!m) throw new Error(`not a version: ${version}`);
  const [, y, mo, d, h, mi, s, us] = m.map(Number) as number[];
  return BigInt(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!)) * 1000n + BigInt(us!);
}

/**
 * The version a change gives a record: the transaction's time, or one microsecond past the current version
 * when that is not later (two changes within a microsecond, or a clock stepped back), so the version moves
 * strictly forward with every change. Worked out here, not in the UPDATE, and stored as a constant: Citus
 * refuses a STABLE function (now(), timestamptz + interval) over a column in an UPDATE (docs/scale-out.md).
 * `updatedAt` is the stored value (an ISO 8601 text with microseconds), `version` its text as versionSql reads it.
 */
export function nextVersion(current: string | null, now: string): { version: string; updatedAt: string } {
  const nowMicros = versionMicros(now);
  const currentMicros = current === null ? null : versionMicros(current);
  const micros = currentMicros !== null && currentMicros >= nowMicros ? currentMicros + 1n : nowMicros;
  const date = new Date(Number(micros / 1000n));
  const fraction = String(micros % 1000000n).padStart(6, '0');
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const version = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}${fraction}`;
  return { version, updatedAt: `${iso.slice(0, 19)}.${fraction}Z` };
}
