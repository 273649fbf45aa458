// Breaking changes between two API descriptions (docs/api-guide.md, "Versions and deprecation").
// A change breaks clients when a request that worked stops working, or a client reading an answer
// stops finding what it read:
//   - an operation or a success response removed;
//   - inputs (request bodies, parameters): a field removed, a new required field or parameter, a
//     type narrowed (a type or null no longer accepted, an enum value removed, a bound added or
//     tightened: maxLength, minLength, maximum, minimum, maxItems, minItems, pattern, format);
//   - outputs (2xx bodies): a field removed or no longer always present, a type widened (a new type
//     or null a client does not expect).
//   node --import tsx scripts/openapi-breaking.ts <old.json> [new.json]   (default new: the served description)
// Exit status 1 when anything breaks. Only what an OpenAPI 3.1 description of this API uses is compared.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** The object a `$ref` inside `doc` points to, followed until it is not a reference. */
function deref(doc: Json, value: Json | undefined): Json | undefined {
  let out = value;
  for (let hops = 0; out && typeof out.$ref === 'string' && hops < 32; hops++) {
    const parts = (out.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    out = parts.reduce<Json | undefined>((node, key) => node?.[key], doc);
  }
  return out;
}

const typesOf = (s: Json): Set<string> => new Set(s.type === undefined ? [] : [s.type].flat());

/** Compares two schemas in one direction; `seen` stops at recursive references. */
class SchemaComparer {
  readonly found: string[] = [];
  private readonly seen = new Set<string>();

  constructor(
    private readonly oldDoc: Json,
    private readonly newDoc: Json,
  ) {}

  /** An input: everything the old schema accepted must still be accepted. */
  input(oldRaw: Json | undefined, newRaw: Json | undefined, at: string): void {
    const key = `in ${at} ${oldRaw?.$ref ?? ''} ${newRaw?.$ref ?? ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const o = deref(this.oldDoc, oldRaw);
    const n = deref(this.newDoc, newRaw);
    if (!o || !n) return;
    const [ot, nt] = [typesOf(o), typesOf(n)];
    if (nt.size > 0) {
      const lost = [...ot].filter((t) => !nt.has(t) && !(t === 'integer' && nt.has('number')));
      if (ot.size === 0 || lost.length > 0) this.found.push(`${at}: no longer accepts ${ot.size === 0 ? 'any type' : lost.join(', ')}`);
    }
    if (Array.isArray(n.enum)) {
      const removed = Array.isArray(o.enum) ? o.enum.filter((v: unknown) => !n.enum.includes(v)) : ['values outside the new enum'];
      if (removed.length > 0) this.found.push(`${at}: enum value(s) removed: ${removed.map((v: unknown) => JSON.stringify(v)).join(', ')}`);
    }
    if (n.const !== undefined && o.const !== n.const) this.found.push(`${at}: now only ${JSON.stringify(n.const)}`);
    for (const bound of ['maxLength', 'maximum', 'exclusiveMaximum', 'maxItems', 'maxProperties'] as const) {
      if (n[bound] !== undefined && (o[bound] === undefined || n[bound] < o[bound])) {
        this.found.push(`${at}: ${bound} ${o[bound] === undefined ? 'added' : `lowered from ${o[bound]}`} (${n[bound]})`);
      }
    }
    for (const bound of ['minLength', 'minimum', 'exclusiveMinimum', 'minItems', 'minProperties'] as const) {
      if (n[bound] !== undefined && (o[bound] === undefined || n[bound] > o[bound])) {
        this.found.push(`${at}: ${bound} ${o[bound] === undefined ? 'added' : `raised from ${o[bound]}`} (${n[bound]})`);
      }
    }
    for (const rule of ['pattern', 'format'] as const) {
      if (n[rule] !== undefined && n[rule] !== o[rule] && !(rule === 'format' && isNumberFormat(n))) {
        this.found.push(`${at}: ${rule} ${o[rule] === undefined ? 'added' : 'changed'} (${n[rule]})`);
      }
    }
    const required = new Set<string>(n.required ?? []);
    for (const name of required) if (!(o.required ?? []).includes(name)) this.found.push(`${at}.${name}: newly required`);
    for (const [name, child] of Object.entries<Json>(o.properties ?? {})) {
      const next = n.properties?.[name];
      if (next === undefined) this.found.push(`${at}.${name}: removed`);
      else this.input(child, next, `${at}.${name}`);
    }
    if (o.items && n.items) this.input(o.items, n.items, `${at}[]`);
    this.branches(o, n, at, (a, b, where) => this.input(a, b, where));
  }

  /** An output: everything a client read must still be there, of a type it expects. */
  output(oldRaw: Json | undefined, newRaw: Json | undefined, at: string): void {
    const key = `out ${at} ${oldRaw?.$ref ?? ''} ${newRaw?.$ref ?? ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const o = deref(this.oldDoc, oldRaw);
    const n = deref(this.newDoc, newRaw);
    if (!o || !n) return;
    const [ot, nt] = [typesOf(o), typesOf(n)];
    if (ot.size > 0) {
      const added = [...nt].filter((t) => !ot.has(t) && !(t === 'integer' && ot.has('number')));
      if (nt.size === 0 || added.length > 0) this.found.push(`${at}: may now be ${nt.size === 0 ? 'any type' : added.join(', ')}`);
    }
    for (const name of o.required ?? []) if (!(n.required ?? []).includes(name)) this.found.push(`${at}.${name}: no longer always present`);
    for (const [name, child] of Object.entries<Json>(o.properties ?? {})) {
      const next = n.properties?.[name];
      if (next === undefined) this.found.push(`${at}.${name}: removed`);
      else this.output(child, next, `${at}.${name}`);
    }
    if (o.items && n.items) this.output(o.items, n.items, `${at}[]`);
    this.branches(o, n, at, (a, b, where) => this.output(a, b, where));
  }

  /** allOf/anyOf/oneOf of the same length are compared branch by branch. */
  private branches(o: Json, n: Json, at: string, compare: (a: Json, b: Json, at: string) => void): void {
    for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
      if (Array.isArray(o[k]) && Array.isArray(n[k]) && o[k].length === n[k].length) {
        for (const [i, branch] of (o[k] as Json[]).entries()) compare(branch, n[k][i], at);
      }
    }
  }
}

/** `int32`, `int64`, `double` name a number's width for generators; they refuse nothing the type and range allow. */
const isNumberFormat = (s: Json) =>
  ['int32', 'int64', 'float', 'double'].includes(s.format) && [...typesOf(s)].some((t) => t === 'integer' || t === 'number');

function parameters(doc: Json, pathItem: Json, op: Json): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const raw of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])]) {
    const p = deref(doc, raw);
    if (p) out.set(`${p.in} ${p.name}`, p);
  }
  return out;
}

const jsonSchemaOf = (doc: Json, holder: Json | undefined): Json | undefined => {
  const content = deref(doc, holder)?.content ?? {};
  const type = Object.keys(content).find((t) => t.includes('json'));
  return type ? content[type].schema : undefined;
};

/** Every breaking change from `oldDoc` to `newDoc`, one line each. */
export function breakingChanges(oldDoc: Json, newDoc: Json): string[] {
  const compare = new SchemaComparer(oldDoc, newDoc);
  for (const [path, oldItem] of Object.entries<Json>(oldDoc.paths ?? {})) {
    for (const method of METHODS) {
      const oldOp = oldItem[method];
      if (!oldOp) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const newItem = newDoc.paths?.[path];
      const newOp = newItem?.[method];
      if (!newOp) {
        compare.found.push(`${where}: operation removed`);
        continue;
      }
      const oldParams = parameters(oldDoc, oldItem, oldOp);
      for (const [key, p] of parameters(newDoc, newItem, newOp)) {
        const before = oldParams.get(key);
        if (!before && p.required) compare.found.push(`${where} parameter ${key}: new and required`);
        if (before && p.required && !before.required) compare.found.push(`${where} parameter ${key}: newly required`);
        if (before) compare.input(before.schema, p.schema, `${where} parameter ${key}`);
      }
      for (const key of oldParams.keys()) {
        if (!parameters(newDoc, newItem, newOp).has(key)) compare.found.push(`${where} parameter ${key}: removed`);
      }
      const oldBody = deref(oldDoc, oldOp.requestBody);
      const newBody = deref(newDoc, newOp.requestBody);
      if (newBody?.required && !oldBody?.required) compare.found.push(`${where} request body: newly required`);
      if (oldBody && !newBody) compare.found.push(`${where} request body: removed`);
      if (oldBody && newBody) compare.input(jsonSchemaOf(oldDoc, oldBody), jsonSchemaOf(newDoc, newBody), `${where} body`);
      for (const [status, oldResponse] of Object.entries<Json>(oldOp.responses ?? {})) {
        if (!status.startsWith('2')) continue;
        const newResponse = newOp.responses?.[status];
        if (!newResponse) {
          compare.found.push(`${where} response ${status}: removed`);
          continue;
        }
        compare.output(jsonSchemaOf(oldDoc, oldResponse), jsonSchemaOf(newDoc, newResponse), `${where} ${status}`);
      }
    }
  }
  return [...new Set(compare.found)];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [oldPath, newPath] = process.argv.slice(2);
  if (!oldPath) {
    console.error('usage: openapi-breaking <old.json> [new.json]');
    process.exit(2);
  }
  const { buildOpenApiJson, COMMIT_ENV } = await import('./openapi-dump.ts');
  const oldDoc = JSON.parse(readFileSync(oldPath, 'utf8'));
  const newDoc = JSON.parse(newPath ? readFileSync(newPath, 'utf8') : await buildOpenApiJson(COMMIT_ENV));
  const found = breakingChanges(oldDoc, newDoc);
  for (const line of found) console.log(line);
  console.log(found.length === 0 ? 'no breaking changes' : `${found.length} breaking change(s)`);
  process.exit(found.length === 0 ? 0 : 1);
}
