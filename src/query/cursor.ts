// Opaque keyset cursors: base64url of JSON `{sort, value, id}` — the sort they were made under,
// the last item's sort value (timestamps at full microsecond precision) and its id.
import type { FieldKind } from '../schemas/common.ts';
import { refuse } from './refusals.ts';
import { isUuid } from '../schemas/formats.ts';
import { parseCursorValue } from './values.ts';

export interface CursorPosition {
  /** The sort value as the text cast back in SQL, or null for a NULL sort value. */
  value: string | null;
  id: string;
}

export function encodeCursor(sort: string, value: string | number | boolean | null, id: string): string {
  return Buffer.from(JSON.stringify({ sort, value, id }), 'utf8').toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const MAX_CURSOR_LENGTH = 2048;

/** Refuses (invalid_cursor) anything not made by encodeCursor under the same sort. */
export function decodeCursor(cursor: string, sort: string, kind: FieldKind, nullable: boolean): CursorPosition {
  if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) throw refuse.cursor();
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse.cursor();
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw refuse.cursor();
  const { sort: s, value, id } = body as Record<string, unknown>;
  if (s !== sort || typeof id !== 'string' || !isUuid(id)) throw refuse.cursor();
  const parsed = parseCursorValue(kind, value);
  if (parsed === undefined || (parsed === null && !nullable)) throw refuse.cursor();
  return { value: parsed, id: id.toLowerCase() };
}
