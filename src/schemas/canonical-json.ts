// JSON with object keys sorted at every level, so equal values always give equal text: the
// request signature of an idempotent POST and the shape comparison of named OpenAPI schemas.
// A value up to RECURSION_LIMIT levels deep (every real body) is written by plain recursion, the fast
// path of every idempotent POST; a deeper one by a walker with its own stack: a body nested 100 000
// levels deep fits in 1 MiB and must not overflow the call stack (a 500).

/** Text to emit as is, told apart from the values still to serialize. */
class Raw {
  constructor(readonly text: string) {}
}

const isIndex = (k: string) => /^(0|[1-9]\d*)$/.test(k) && Number(k) < 2 ** 32 - 1;
const startsWithDigit = (k: string) => k.charCodeAt(0) >= 48 && k.charCodeAt(0) <= 57;

/** Keys sorted, array-index keys first in numeric order: the order an object built from sorted keys
 *  enumerates them in, which the signatures stored before this walker were made with. */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  // A body's objects have a few keys each: sorted in place, where sort() would copy them into a work array first.
  if (keys.length > 12) keys.sort();
  else
    for (let i = 1; i < keys.length; i++) {
      const key = keys[i] as string;
      let j = i - 1;
      for (; j >= 0 && (keys[j] as string) > key; j--) keys[j + 1] = keys[j] as string;
      keys[j + 1] = key;
    }
  if (!keys.some(startsWithDigit)) return keys;
  return [...keys.filter(isIndex).sort((a, b) => Number(a) - Number(b)), ...keys.filter((k) => !isIndex(k))];
}

/** What JSON.stringify writes for `value`: its `toJSON()` when it has one (a Date), else the value. */
function jsonOf(value: unknown): unknown {
  const withToJson = value as { toJSON?: unknown } | null;
  return withToJson !== null && typeof withToJson === 'object' && typeof withToJson.toJSON === 'function'
    ? (withToJson as { toJSON: () => unknown }).toJSON()
    : value;
}

const skipped = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** Deeper values are written by the walker (`walked`), whose stack is an array. */
const RECURSION_LIMIT = 200;

class TooDeep {}
const tooDeep = new TooDeep();

/** A key as JSON text, kept for the keys bodies repeat (every item of a sale has the same four). */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 1_000;

function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** The text the recursive writer has written so far (one text grows, no text per value to join). */
let text = '';

/** The recursive writer: appends the same text as `walked` to `text`, or throws `tooDeep` past RECURSION_LIMIT levels. */
function write(value: unknown, depth: number): void {
  const item = jsonOf(value);
  if (item === null || typeof item !== 'object') {
    text += JSON.stringify(item) ?? 'null';
    return;
  }
  if (depth >= RECURSION_LIMIT) throw tooDeep;
  if (Array.isArray(item)) {
    text += '[';
    for (let i = 0; i < item.length; i++) {
      if (i > 0) text += ',';
      if (skipped(item[i])) text += 'null';
      else write(item[i], depth + 1);
    }
    text += ']';
    return;
  }
  const record = item as Record<string, unknown>;
  text += '{';
  let first = true;
  for (const key of sortedKeys(record)) {
    if (skipped(record[key])) continue;
    if (!first) text += ',';
    text += quotedKey(key);
    text += ':';
    write(record[key], depth + 1);
    first = false;
  }
  text += '}';
}

/** Canonical JSON text of a JSON value; `undefined` (no body) is the empty string. Same text as
 *  JSON.stringify with sorted keys: members whose value JSON cannot hold are left out, and are null in arrays. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  // Kept and given back: a value's toJSON() may itself ask for canonical JSON.
  const outer = text;
  text = '';
  try {
    write(value, 0);
    return text;
  } catch (err) {
    if (err !== tooDeep) throw err;
    return walked(value);
  } finally {
    text = outer;
  }
}

/** The walker with its own stack, for values nested past RECURSION_LIMIT levels. */
function walked(value: unknown): string {
  const out: string[] = [];
  const work: unknown[] = [value];
  while (work.length > 0) {
    const popped = work.pop();
    if (popped instanceof Raw) {
      out.push(popped.text);
      continue;
    }
    const item = jsonOf(popped);
    if (Array.isArray(item)) {
      work.push(new Raw(']'));
      for (let i = item.length - 1; i >= 0; i--) {
        work.push(skipped(item[i]) ? null : item[i]);
        if (i > 0) work.push(new Raw(','));
      }
      work.push(new Raw('['));
    } else if (item !== null && typeof item === 'object') {
      const record = item as Record<string, unknown>;
      const keys = sortedKeys(record).filter((k) => !skipped(record[k]));
      work.push(new Raw('}'));
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        work.push(record[key], new Raw(`${i > 0 ? ',' : ''}${JSON.stringify(key)}:`));
      }
      work.push(new Raw('{'));
    } else {
      out.push(JSON.stringify(item) ?? 'null');
    }
  }
  return out.join('');
}
