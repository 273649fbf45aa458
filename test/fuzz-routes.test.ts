// Property-based fuzzing (fast-check) of every route in the route table: hostile paths, query strings, headers
// and bodies (wrong types, huge values, NUL, deep nesting, SQL-looking and %/_ strings, unicode, duplicated
// parameters). Every answer is below 500, an error is problem+json with X-Request-Id, and no answer carries
// SQL, driver text, a constraint name, a stack frame or a file path. Time-bounded; the seed is printed for
// replay (FUZZ_SEED=<seed>, FUZZ_TIME_MS to run longer).
// A second property walks every write body of the served description (issue 26): random,
// incompressible strings up to the body limit in every field, numbers at and past their bounds
// (and past what a double holds), deep and wide JSON; the same assertions. It is bounded by count
// (FUZZ_BODY_RUNS), not by time, so a slow machine runs the same bodies, only slower.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { writer } from './helpers/write-fixtures.ts';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
const TIME_MS = Number(process.env.FUZZ_TIME_MS || 30_000);
const BODY_RUNS = Number(process.env.FUZZ_BODY_RUNS || 24);
/** A runaway guard only: the runs above take seconds. */
const BODY_TIME_MS = Number(process.env.FUZZ_BODY_TIME_MS || 180_000);

/** Text no correct answer contains: what the driver, the SQL engine or the runtime would leak. */
const LEAKS =
  /syntax error|violates|duplicate key|relation "|column "|SQLSTATE|constraint|invalid input syntax|pg_|ECONNREFUSED|node_modules|\.ts:\d|\bat [\w.<>]+ \(|\/work\/|\/src\/|kysely|postgres\.js|pglite|TypeError|ReferenceError|RangeError/i;

const SQLISH = [
  "' OR '1'='1",
  "'; DROP TABLE customers; --",
  '1; SELECT pg_sleep(1)',
  '%',
  '_',
  '%_%',
  '\\',
  "\\'",
  'NULL',
  '$1',
  '::text',
];
const hostileText = fc.oneof(
  fc.constantFrom(...SQLISH),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('\u0000', 'a\u0000b', '\uFFFF', '\uD800', '😀'.repeat(50), 'x'.repeat(5_000), '-1', '1e309', 'NaN', '0x10', ' '),
);
const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileText,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom(Number.MAX_SAFE_INTEGER, -1e300, 1e21),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.constantFrom('items', 'full_name', 'phone', 'email', 'quantity', '__proto__', 'constructor'), hostileText),
      tie('value'),
      {
        maxKeys: 4,
      },
    ),
  ),
})).value;
/** 200 levels of arrays: parsers and validators must not recurse into a 500. */
const deep = fc.constant(JSON.parse(`${'['.repeat(200)}1${']'.repeat(200)}`));
const QUERY_NAMES = [
  'limit',
  'cursor',
  'sort',
  'fields',
  'include',
  'q',
  'filter[id]',
  'filter[created_at][gte]',
  'filter[name]',
  'filter[x][y][z]',
];

/** Percent-encodes any string, lone surrogates included (encodeURIComponent throws on those). */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}

const request = (routes: { method: string; url: string }[]) =>
  fc.record({
    route: fc.constantFrom(...routes),
    param: fc.oneof(fc.uuid(), hostileText),
    rawParam: fc.boolean(),
    query: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_NAMES), hostileText), fc.oneof(hostileText, fc.integer().map(String))), {
      maxLength: 5,
    }),
    headers: fc.dictionary(
      fc.constantFrom('x-request-id', 'idempotency-key', 'accept', 'content-type', 'x-forwarded-for', 'if-none-match', 'x-extra'),
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
      { maxKeys: 3 },
    ),
    body: fc.option(
      fc.oneof(
        hostileValue,
        deep,
        hostileText.map((t) => ({ raw: t })),
      ),
      { nil: undefined },
    ),
    auth: fc.constantFrom('key', 'key', 'key', 'none', 'garbage'),
  });

/** Below 500, X-Request-Id, an error is problem+json with that id, and nothing of the server's leaks. */
async function assertAnswer(res: Response, what: string, clientWords: string[]): Promise<void> {
  const text = await res.text();
  assert.ok(res.status < 500, `${what} → ${res.status}: ${text.slice(0, 300)}`);
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId, 'X-Request-Id on every answer');
  if (res.status >= 400) {
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, `${res.status} ${text.slice(0, 200)}`);
    const problem = JSON.parse(text) as Record<string, unknown>;
    assert.equal(problem.request_id, requestId);
    // `instance` echoes the path the client sent, and a `detail` names the refused parameter as the client
    // wrote it (SPEC part 7): with the client's own words taken out, what is left is the server's.
    const { instance: _echo, ...own } = problem;
    let serverWords = JSON.stringify(own);
    const words = clientWords.filter((w) => w.length > 0).sort((a, b) => b.length - a.length);
    for (const word of words) serverWords = serverWords.split(JSON.stringify(word).slice(1, -1)).join('');
    assert.doesNotMatch(serverWords, LEAKS, `${what}: ${text.slice(0, 300)}`);
  }
}

let s: TestServer;
let key: string;
/** The served description, read before the fuzzers run (the first may exhaust an anonymous rate limit). */
let served: Record<string, any>;
before(async () => {
  s = await startTestServer();
  ({ key } = await writer(s));
  const described = await s.request('GET', '/v1/openapi.json');
  assert.equal(described.status, 200);
  served = described.body;
});
after(() => s.close());

it('every route: hostile input never gives a 5xx, a non-problem error, or leaked internals', async () => {
  const routes = s.app.routeTable.list().filter((r) => r.method !== 'HEAD');
  assert.ok(routes.length > 20, `the route table has the API's routes (${routes.length})`);
  console.log(`fuzz seed=${SEED} (replay: FUZZ_SEED=${SEED}); routes=${routes.length}; time limit ${TIME_MS} ms`);
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(request(routes), async (r) => {
      runs++;
      const param = r.rawParam ? r.param.replace(/[/?#]/g, '') : encode(r.param);
      const path = r.route.url.replace(/:[A-Za-z_]+/g, param || 'x');
      const query = r.query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
      const headers: Record<string, string> = { ...r.headers };
      if (r.auth === 'key') headers.authorization = `Bearer ${key}`;
      if (r.auth === 'garbage') headers.authorization = `Bearer ${param.slice(0, 200)}`;
      let body: string | undefined;
      if (r.body !== undefined && r.route.method !== 'GET') {
        body =
          typeof r.body === 'object' && r.body !== null && 'raw' in r.body
            ? String((r.body as { raw: string }).raw)
            : JSON.stringify(r.body);
        headers['content-type'] ??= 'application/json';
      }
      let res: Response;
      try {
        res = await fetch(`${s.url}${path}${query ? `?${query}` : ''}`, { method: r.route.method, headers, body });
      } catch (err) {
        // fetch itself refuses some inputs (a header value it cannot send): nothing reached the server.
        if (err instanceof TypeError && !/fetch failed/.test(err.message)) return;
        // …or refuses it only when sending (undici's invalid-argument error, e.g. a control character in a header).
        if ((err as { cause?: { code?: string } }).cause?.code === 'UND_ERR_INVALID_ARG') return;
        throw err;
      }
      await assertAnswer(res, `${r.route.method} ${path}`, [r.param, ...r.query.flat()]);
    }),
    {
      seed: SEED,
      numRuns: 1_000_000,
      interruptAfterTimeLimit: TIME_MS,
      markInterruptAsFailure: false,
      endOnFailure: true,
      includeErrorInReport: true,
    },
  );
  console.log(`fuzz runs=${runs}`);
  assert.ok(runs > 50, 'the fuzzer ran');
});

type Schema = Record<string, any>;
const BODY_LIMIT = 1024 * 1024;

/** A small seeded generator, so one fast-check seed replays a whole body. */
function prng(seed: number) {
  let a = seed >>> 0;
  return (n: number) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * n;
  };
}
/** Random code points (ASCII, Latin-1, CJK, emoji): text PostgreSQL cannot compress below an index's limit. */
function randomText(rand: (n: number) => number, length: number): string {
  const ranges = [
    [0x30, 0x7a],
    [0x30, 0x7a],
    [0xc0, 0xff],
    [0x4e00, 0x9fff],
    [0x1f600, 0x1f64f],
  ] as const;
  let out = '';
  for (let i = 0; i < length; i++) {
    const [low, high] = ranges[Math.floor(rand(ranges.length))] as readonly [number, number];
    out += String.fromCodePoint(low + Math.floor(rand(high - low + 1)));
  }
  return out;
}

/** Written in place of a number the JSON text then spells as a literal no double holds. */
const HUGE = '\u0000huge\u0000';
type Mode = 'long-everywhere' | 'long-one' | 'numbers' | 'deep' | 'wide';

/** A body for `schema`: every field present, strings long, numbers at or past their bounds. */
function bodyFor(schema: Schema, doc: Schema, rand: (n: number) => number, mode: Mode, stringLength: number, depth = 0): unknown {
  if (typeof schema.$ref === 'string')
    return bodyFor(doc.components.schemas[schema.$ref.split('/').pop() as string], doc, rand, mode, stringLength, depth);
  const types: string[] = [schema.type ?? (schema.properties ? 'object' : 'string')].flat().filter((t: string) => t !== 'null');
  const branch = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branch)) return bodyFor(branch[Math.floor(rand(branch.length))], doc, rand, mode, stringLength, depth);
  const type = types[Math.floor(rand(types.length))] ?? 'string';
  if (type === 'object' && depth < 4) {
    const out: Record<string, unknown> = {};
    for (const [name, child] of Object.entries<Schema>(schema.properties ?? {}))
      out[name] = bodyFor(child, doc, rand, mode, stringLength, depth + 1);
    return out;
  }
  if (type === 'array' && depth < 4) {
    const count =
      mode === 'numbers' ? [0, 1, schema.maxItems ?? 3, (schema.maxItems ?? 3) + 1][Math.floor(rand(4))] : 1 + Math.floor(rand(2));
    return Array.from({ length: count }, () => bodyFor(schema.items ?? {}, doc, rand, mode, stringLength, depth + 1));
  }
  if (type === 'integer' || type === 'number') {
    const max = schema.maximum ?? 2 ** 31;
    const min = schema.minimum ?? schema.exclusiveMinimum ?? -(2 ** 31);
    const choices = [max, min, max + 1, min - 1, max + 0.001, min - 0.001, 2 ** 53 + 1, -(2 ** 63), 1e308, -1e308, 5e-324, HUGE];
    return choices[Math.floor(rand(choices.length))];
  }
  if (type === 'boolean') return rand(2) < 1;
  if (Array.isArray(schema.enum) && rand(2) < 1) return schema.enum[Math.floor(rand(schema.enum.length))];
  if (schema.format === 'uuid' && rand(2) < 1) return randomUUID();
  return randomText(rand, stringLength);
}

function countStrings(value: unknown): number {
  if (typeof value === 'string') return 1;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countStrings(v), 0);
  if (value && typeof value === 'object') return Object.values(value).reduce((n: number, v) => n + countStrings(v), 0);
  return 0;
}

it('every write body: long random strings in every field, numbers at and past bounds, deep and wide JSON never give a 5xx or a leak', async () => {
  const doc = served;
  const writes: { method: string; path: string; schema: Schema }[] = [];
  for (const [path, item] of Object.entries<Schema>(doc.paths)) {
    for (const method of ['post', 'put', 'patch']) {
      let requestBody = item[method]?.requestBody;
      if (typeof requestBody?.$ref === 'string') requestBody = doc.components.requestBodies[requestBody.$ref.split('/').pop()];
      const schema = requestBody?.content?.['application/json']?.schema;
      if (schema) writes.push({ method: method.toUpperCase(), path, schema });
    }
  }
  assert.ok(writes.length >= 10, `write bodies in the description: ${writes.length}`);
  // Real records, so a PATCH that passes validation reaches the database.
  const ids: Record<string, string> = {};
  const seedBodies: Record<string, unknown> = {
    customers: { full_name: 'Fuzz', email: 'fuzz@example.com' },
    suppliers: { name: 'Fuzz' },
    expenses: { expense_type: 'f', description: 'd', original_amount: 1, final_amount: 1 },
    sales: { items: [{ catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 1, unit_price: 1 }] },
  };
  for (const [resource, body] of Object.entries(seedBodies)) {
    const res = await s.request('POST', `/v1/${resource}`, { key, body });
    assert.equal(res.status, 201, res.text);
    ids[resource] = res.body.data.id;
  }
  console.log(`body fuzz seed=${SEED}; write bodies=${writes.length}; runs ${BODY_RUNS}`);
  let runs = 0;
  const modes: Mode[] = ['long-everywhere', 'long-everywhere', 'long-one', 'numbers', 'deep', 'wide'];
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        write: fc.constantFrom(...writes),
        mode: fc.constantFrom(...modes),
        seed: fc.integer(),
        fill: fc.double({ min: 0, max: 1, noNaN: true }),
        idempotent: fc.boolean(),
      }),
      async ({ write, mode, seed, fill, idempotent }) => {
        runs++;
        const rand = prng(seed);
        const resource = write.path.split('/')[2] as string;
        const path = write.path.replace(/\{[^}]+\}/g, ids[resource] ?? randomUUID());
        let text: string;
        if (mode === 'deep') {
          const depth = 1000 + Math.floor(fill * 100_000);
          const open = rand(2) < 1 ? '[' : '{"a":';
          const close = open === '[' ? ']' : '}';
          text = `{"${Object.keys(write.schema.properties ?? { x: 1 })[0] ?? 'x'}":${open.repeat(depth)}1${close.repeat(depth)}}`;
        } else if (mode === 'wide') {
          const width = 1000 + Math.floor(fill * 60_000);
          text =
            rand(2) < 1
              ? `{${Array.from({ length: width }, (_, i) => `"k${i}":${i}`).join(',')}}`
              : `{"items":[${Array(width).fill('{}').join(',')}],"tags":[${Array(width).fill('"t"').join(',')}]}`;
        } else {
          // Strings long enough that the whole body comes near the 1 MiB limit (4 bytes a character at worst).
          const shape = bodyFor(write.schema, doc, rand, mode, 0);
          const strings = Math.max(1, countStrings(shape));
          const perString = mode === 'long-one' ? Math.floor((fill * BODY_LIMIT) / 3) : Math.floor((fill * BODY_LIMIT) / 3 / strings);
          const body = bodyFor(write.schema, doc, rand, mode, mode === 'numbers' ? 40 : Math.max(1, perString));
          text = JSON.stringify(body).replaceAll(JSON.stringify(HUGE), rand(2) < 1 ? '1e400' : '-1E+999');
        }
        const res = await fetch(`${s.url}${path}`, {
          method: write.method,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            ...(idempotent ? { 'idempotency-key': randomUUID() } : {}),
          },
          body: text,
        });
        await assertAnswer(res, `${write.method} ${path} (${mode}, ${text.length} chars)`, []);
      },
    ),
    {
      seed: SEED,
      numRuns: BODY_RUNS,
      interruptAfterTimeLimit: BODY_TIME_MS,
      markInterruptAsFailure: true,
      endOnFailure: true,
      includeErrorInReport: true,
    },
  );
  console.log(`body fuzz runs=${runs}`);
  assert.equal(runs, BODY_RUNS, 'the body fuzzer ran every body');
});
