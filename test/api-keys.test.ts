// Unit tests of key generation, parsing, hashing, scopes and IP allow-lists.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateApiKey, hashApiKey, parseApiKey } from '../src/domain/api-keys.ts';
import { compileAllowList, isValidIpRange } from '../src/domain/ip-allowlist.ts';
import { expandScopes, isValidScope } from '../src/domain/scopes.ts';

describe('API keys', () => {
  it('generates <brand>_<mode>_ + 32 base62 + 6 checksum characters, distinct each time', () => {
    const a = generateApiKey('balcao', 'live');
    const b = generateApiKey('balcao', 'test');
    assert.match(a.key, /^balcao_live_[0-9A-Za-z]{38}$/);
    assert.match(b.key, /^balcao_test_[0-9A-Za-z]{38}$/);
    assert.notEqual(a.key, generateApiKey('balcao', 'live').key);
    assert.equal(a.last4, a.key.slice(-4));
    assert.equal(a.hash, hashApiKey(a.key));
    assert.match(a.hash, /^[0-9a-f]{64}$/);
    assert.ok(!a.hash.includes(a.key));
  });

  it('parses a generated key back to its mode and hash', () => {
    const g = generateApiKey('acme', 'test');
    assert.deepEqual(parseApiKey(g.key, 'acme'), { mode: 'test', hash: g.hash });
  });

  it('refuses a key with one character changed, truncated, of another brand or mode word', () => {
    const { key } = generateApiKey('balcao', 'live');
    const i = 20;
    const flipped = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    assert.equal(parseApiKey(flipped, 'balcao'), undefined);
    assert.equal(parseApiKey(key.slice(0, -1), 'balcao'), undefined);
    assert.equal(parseApiKey(key, 'other'), undefined);
    assert.equal(parseApiKey(key.replace('_live_', '_prod_'), 'balcao'), undefined);
    assert.equal(parseApiKey(`${key}x`, 'balcao'), undefined);
    assert.equal(parseApiKey('', 'balcao'), undefined);
  });
});

describe('scopes', () => {
  it('validates scope names', () => {
    for (const s of ['customers:read', 'bank-accounts:write', '*:read', '*:write', 'pets:read']) assert.ok(isValidScope(s), s);
    for (const s of ['customers', 'customers:delete', 'bank_accounts:read', 'foo:read', '*:*', '']) assert.ok(!isValidScope(s), s);
  });

  it('expands write ⇒ read, *:read ⇒ every read, *:write ⇒ everything', () => {
    const w = expandScopes(['customers:write']);
    assert.ok(w.has('customers:read') && w.has('customers:write') && !w.has('sales:read'));
    const r = expandScopes(['*:read']);
    assert.ok(r.has('sales:read') && r.has('bank-accounts:read') && !r.has('sales:write'));
    const all = expandScopes(['*:write']);
    assert.ok(all.has('sales:write') && all.has('deals:read') && all.has('expenses:write'));
    const read = expandScopes(['sales:read']);
    assert.ok(read.has('sales:read') && !read.has('sales:write'));
  });
});

describe('IP allow-lists', () => {
  it('matches addresses and CIDR ranges of both families, and IPv4-mapped IPv6', () => {
    const m = compileAllowList(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1'])!;
    assert.ok(m('10.20.30.40'));
    assert.ok(m('::ffff:10.1.2.3'));
    assert.ok(m('192.168.1.7'));
    assert.ok(!m('192.168.1.8'));
    assert.ok(m('2001:db8:1::5'));
    assert.ok(!m('2001:db9::1'));
    assert.ok(m('::1'));
    assert.ok(!m('127.0.0.1'));
    assert.ok(!m('not an ip'));
  });

  it('an empty list allows everything; invalid entries are refused', () => {
    assert.equal(compileAllowList([]), null);
    assert.ok(isValidIpRange('fe80::/10'));
    assert.ok(!isValidIpRange('10.0.0.0/33'));
    assert.ok(!isValidIpRange('999.1.1.1'));
  });
});
