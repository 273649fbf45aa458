// Property-based fuzzing (fast-check) of every route in the route table: hostile paths, query strings, headers
// and bodies (wrong types, huge values, NUL, deep nesting, SQL-looking and %/_ strings, unicode, duplicated
// parameters). Every answer is below 500, an error is problem+json with X-Request-Id, and no answer carries
// SQL, driver text, a constraint name, a stack frame or a file path. Time-bounded; the seed is printed for
// replay (FUZZ_SEED=<seed>, FUZZ_TIME_MS to run longer).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { writer } from './helpers/write-fixtures.ts';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
const TIME_MS = Number(process.env.FUZZ_TIME_MS || 30_000);

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

let s: TestServer;
let key: string;
before(async () => {
  s = await startTestServer();
  ({ key } = await writer(s));
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
      const text = await res.text();
      assert.ok(res.status < 500, `${r.route.method} ${path} → ${res.status}: ${text.slice(0, 300)}`);
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
        const clientWords = [r.param, ...r.query.flat()].filter((w) => w.length > 0).sort((a, b) => b.length - a.length);
        for (const word of clientWords) serverWords = serverWords.split(JSON.stringify(word).slice(1, -1)).join('');
        assert.doesNotMatch(serverWords, LEAKS, `${r.route.method} ${path}: ${text.slice(0, 300)}`);
      }
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
