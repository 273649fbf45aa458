// Named schemas, so generated clients get named types: every titled object schema of the
// document (resource rows, write inputs, Pagination…) moves to `components.schemas` under its
// title and is referenced from where it was. Two different shapes with one title (a sale as
// listed and as read with its includes) get distinct, descriptive names.
import { canonicalJson } from '../schemas/canonical-json.ts';
import { mapSubschemas } from '../schemas/subschemas.ts';

type Schema = Record<string, any>;

const pascal = (s: string) => s.replace(/(^|_)([a-z0-9])/g, (_m, _u, ch: string) => ch.toUpperCase());
const safeName = (title: string) => title.replace(/[^A-Za-z0-9._-]/g, '');

export class SchemaNamer {
  private readonly byName = new Map<string, { schema: Schema; key: string }>();
  private readonly byTitle = new Map<string, string[]>();

  constructor(existing: Record<string, Schema>) {
    for (const [name, schema] of Object.entries(existing)) {
      this.byName.set(name, { schema, key: canonicalJson(schema) });
      const title = typeof schema.title === 'string' ? schema.title : name;
      this.byTitle.set(title, [...(this.byTitle.get(title) ?? []), name]);
    }
  }

  /**
   * Hoists the titled schemas inside `schema` (and `schema` itself, unless `keepRoot`); returns what
   * replaces it. Under a request body, a schema declaring `default`s stays inline: generators such as
   * openapi-typescript read a named schema's defaults as "always present", which holds for responses
   * but would make those fields required in requests.
   */
  hoist(schema: Schema, keepRoot = false, inRequest = false): Schema {
    if (typeof schema.$ref === 'string') return schema;
    mapSubschemas(schema, (child) => this.hoist(child, false, inRequest));
    const isObject = schema.type === 'object' || (schema.properties !== undefined && schema.type === undefined);
    if (keepRoot || typeof schema.title !== 'string' || !isObject) return schema;
    if (inRequest && Object.values<Schema>(schema.properties ?? {}).some((p) => p.default !== undefined)) return schema;
    return { $ref: `#/components/schemas/${this.nameFor(schema)}` };
  }

  get(name: string): Schema | undefined {
    return this.byName.get(name)?.schema;
  }

  schemas(): Record<string, Schema> {
    return Object.fromEntries([...this.byName].map(([name, { schema }]) => [name, schema]));
  }

  private nameFor(schema: Schema): string {
    const key = canonicalJson(schema);
    const title = schema.title as string;
    const names = this.byTitle.get(title) ?? [];
    for (const name of names) if (this.byName.get(name)?.key === key) return name;
    const name = names.length === 0 ? safeName(title) : this.variantName(title, schema, this.byName.get(names[0] as string)?.schema);
    let unique = name;
    for (let n = 2; this.byName.has(unique); n++) unique = `${name}${n}`;
    this.byName.set(unique, { schema, key });
    this.byTitle.set(title, [...names, unique]);
    return unique;
  }

  /** `SaleWithItems` for the listed `Sale` plus `items`; a numbered name otherwise. */
  private variantName(title: string, schema: Schema, base: Schema | undefined): string {
    const own = Object.keys(schema.properties ?? {});
    const baseProps = new Set(Object.keys(base?.properties ?? {}));
    const extra = own.filter((p) => !baseProps.has(p));
    const missing = [...baseProps].filter((p) => !own.includes(p));
    if (extra.length > 0 && missing.length === 0) return `${safeName(title)}With${extra.map(pascal).join('And')}`;
    return safeName(title);
  }
}
