// Record versions as strong ETags (docs/api-guide.md "ETags and conditional requests"). A version is
// the record's id and its updated_at at microsecond precision, read in the statement that reads the
// record anyway (no extra round trip). Every change goes through the write engine, which moves
// updated_at strictly forward (docs/decisions.md), so the tag changes when, and only when, the record does.
import { hash } from 'node:crypto';
import { VERSION_KEY } from '../../query/version.ts';

export { VERSION_KEY, versionSql } from '../../query/version.ts';

/** The strong tag of one version of one record: opaque, compared byte for byte. */
export function etagOf(id: unknown, version: unknown): string {
  // One-shot `crypto.hash`, as for API keys (domain/api-keys.ts): every answered record is tagged.
  const digest = hash('sha256', `${String(id)}|${version == null ? '' : String(version)}`, 'base64url');
  return `"${digest.slice(0, 27)}"`;
}

/** The tag of a row read with `versionSql()` as VERSION_KEY, which is removed from the row. */
export function takeEtag(row: Record<string, unknown>): string {
  const tag = etagOf(row.id, row[VERSION_KEY]);
  delete row[VERSION_KEY];
  return tag;
}

/** The tags of an If-Match / If-None-Match header: `*`, or a comma list of entity tags. */
function listed(header: string | string[] | undefined): { any: boolean; tags: string[] } | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.trim() === '*') return { any: true, tags: [] };
  const tags = text.match(/(W\/)?"[^"]*"/g) ?? [];
  return { any: false, tags };
}

/** If-None-Match (weak comparison, RFC 9110 13.1.2): true when the client's copy is current. */
export function noneMatchHits(header: string | string[] | undefined, tag: string): boolean {
  const list = listed(header);
  if (!list) return false;
  return list.any || list.tags.some((t) => (t.startsWith('W/') ? t.slice(2) : t) === tag);
}

/** If-Match (strong comparison, RFC 9110 13.1.1): undefined when absent, else whether `tag` satisfies it. */
export function matchHolds(header: string | string[] | undefined, tag: string): boolean | undefined {
  const list = listed(header);
  if (!list) return undefined;
  return list.any || list.tags.includes(tag);
}
