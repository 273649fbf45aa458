// canonicalJson: the same text JSON.stringify gives with keys sorted (so signatures stored before
// the iterative walker still match), and no stack overflow on a body nested 100 000 levels deep.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { canonicalJson } from '../src/schemas/canonical-json.ts';

const byReplacer = (value: unknown) =>
  JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );

test('canonicalJson is JSON.stringify with sorted keys', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => canonicalJson(v) === byReplacer(v)),
    { numRuns: 3000 },
  );
  assert.equal(
    canonicalJson({ b: [1, undefined, { z: 1, a: [] }], a: undefined, '10': 1, '2': 2 }),
    '{"2":2,"10":1,"b":[1,null,{"a":[],"z":1}]}',
  );
  assert.equal(canonicalJson(undefined), '');
  // A toJSON() that asks for canonical JSON itself leaves the outer text whole.
  const inner = { toJSON: () => canonicalJson({ y: 1, x: 2 }) };
  assert.equal(canonicalJson({ b: inner, a: 1 }), '{"a":1,"b":"{\\"x\\":2,\\"y\\":1}"}');
});

test('canonicalJson walks a value nested 100 000 levels deep', () => {
  const deep = JSON.parse(`{"a":${'['.repeat(100_000)}1${']'.repeat(100_000)}}`);
  assert.equal(canonicalJson(deep).length, 200_007);
});

test('canonicalJson gives the same text on both sides of its recursion limit (200 levels)', () => {
  for (const depth of [199, 200, 201, 450]) {
    const nested = JSON.parse(`${'{"b":2,"a":['.repeat(depth)}{"z":null,"y":[1,"x"]}${']}'.repeat(depth)}`);
    assert.equal(canonicalJson(nested), byReplacer(nested), `depth ${depth}`);
  }
});
