// SQL text compiled once per query *shape*. A list or get of one shape (resource, fields, sort, filter
// operators, kind of cursor) always compiles to the same text; only its parameter values change. Building
// and compiling it with Kysely on every request was the largest single item of a list request's CPU
// profile (docs/performance.md), so each shape is built once with placeholder values, and later requests
// of that shape only bind their values to the remembered text.
//
// The placeholders are strings no client value can equal (they start with a NUL, which PostgreSQL text
// refuses anyway); the compiled parameters show where each value goes. A shape whose text would contain a
// placeholder (a value inlined as a literal) is never cached, and neither is anything compiled through
// Kysely plugins (they may rewrite a query; the cached text would skip them).
import { CompiledQuery, type Compilable, type Kysely } from 'kysely';

const PLACEHOLDER = '\u0000balcao-value:';

/** Where each compiled parameter comes from: an index into the request's values, or a constant. */
type Slot = number | { constant: unknown };

interface Template {
  sql: string;
  slots: Slot[];
}

function templateOf(compiled: CompiledQuery, count: number): Template | null {
  if (compiled.sql.includes(PLACEHOLDER)) return null;
  const seen = new Set<number>();
  const slots = compiled.parameters.map((p): Slot => {
    if (typeof p === 'string' && p.startsWith(PLACEHOLDER)) {
      const index = Number(p.slice(PLACEHOLDER.length));
      seen.add(index);
      return index;
    }
    return { constant: p };
  });
  // Every value must land in a parameter, or the text would hold the placeholder's value for good.
  return seen.size === count ? { sql: compiled.sql, slots } : null;
}

/** Builds the statements of one shape from its values (real ones, or the placeholders). */
export type BuildStatements = (values: readonly unknown[]) => readonly Compilable[];

/** Per owner. Bounded: a client cannot grow it without end by inventing shapes (fields subsets, filter sets). */
const MAX_SHAPES = 2_000;

export class StatementCache {
  /** Per owner (a resource descriptor, an include): shape key → its statements' templates. */
  private readonly owners = new WeakMap<object, Map<string, readonly (Template | null)[]>>();

  constructor(private readonly usable: boolean) {}

  /**
   * Statement `index` of the shape `key` of `owner`, with `values` bound; undefined when the shape has
   * fewer statements. `build` must produce the same text for any values of the shape (the owner and the
   * key name everything else) and send each value as a parameter. A null key: a shape not to cache.
   */
  statement(
    owner: object,
    key: string | null,
    index: number,
    values: readonly unknown[],
    build: BuildStatements,
  ): CompiledQuery | undefined {
    if (!this.usable || key === null) return build(values)[index]?.compile();
    let shapes = this.owners.get(owner);
    if (!shapes) {
      shapes = new Map();
      this.owners.set(owner, shapes);
    }
    let templates = shapes.get(key);
    if (!templates) {
      const placeholders = values.map((_, i) => `${PLACEHOLDER}${i}`);
      templates = build(placeholders).map((q) => templateOf(q.compile(), values.length));
      if (shapes.size >= MAX_SHAPES) shapes.clear();
      shapes.set(key, templates);
    }
    if (index >= templates.length) return undefined;
    const template = templates[index];
    if (!template) return build(values)[index]?.compile();
    const parameters = template.slots.map((slot) => (typeof slot === 'number' ? values[slot] : slot.constant));
    return CompiledQuery.raw(template.sql, parameters);
  }

  /** How many shapes of `owner` have a template (for tests and diagnostics). */
  cachedShapes(owner: object): number {
    return [...(this.owners.get(owner)?.values() ?? [])].filter((templates) => templates.every((t) => t !== null)).length;
  }
}

/**
 * The cache's key of a shape named by a few column lists: the text of the last one is kept while the lists stay the
 * same (every sale's are), so a statement compares a few dozen names instead of joining and hashing anew a text of
 * 400 characters.
 */
export class ShapeKeys {
  private lastPrefix = '';
  private lastLists: readonly (readonly string[])[] = [];
  private lastKey = '';

  of(prefix: string, ...lists: readonly (readonly string[])[]): string {
    if (prefix !== this.lastPrefix || !sameLists(lists, this.lastLists)) {
      this.lastPrefix = prefix;
      this.lastLists = lists;
      this.lastKey = `${prefix}|${lists.map((list) => list.join(',')).join('|')}`;
    }
    return this.lastKey;
  }
}

const sameLists = (a: readonly (readonly string[])[], b: readonly (readonly string[])[]): boolean =>
  a.length === b.length && a.every((list, i) => list.length === b[i]!.length && list.every((name, j) => name === b[i]![j]));

const caches = new WeakMap<Kysely<any>, StatementCache>();

/** The cache of one database handle (a handle with plugins gets a pass-through one). */
export function statementCache(db: Kysely<any>): StatementCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new StatementCache(db.getExecutor().plugins.length === 0);
    caches.set(db, cache);
  }
  return cache;
}

const shared = { usable: new StatementCache(true), passThrough: new StatementCache(false) };

/**
 * One cache for every handle without plugins: for statements built on a transaction's handle, which is
 * new in each transaction (the text depends only on the shape, and both engines compile alike).
 */
export function sharedStatementCache(db: Kysely<any>): StatementCache {
  return db.getExecutor().plugins.length === 0 ? shared.usable : shared.passThrough;
}
