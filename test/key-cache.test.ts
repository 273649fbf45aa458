// The key cache (accounts/key-cache.ts) against the real database: known keys are kept least
// recently used first, and unknown hashes have a cache of their own, so a flood of them cannot
// push a real key out. A key changed in the database while cached shows what was served from where.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { KeyCache } from '../src/accounts/key-cache.ts';
import { hashApiKey } from '../src/domain/api-keys.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';

describe('key cache', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  /** Three keys, and a way to make them unknown to the database (so only the cache still knows them). */
  async function keys() {
    const { account, key: a } = await s.createAccountWithKey();
    const { key: b } = await s.createKey(account.id);
    const { key: c } = await s.createKey(account.id);
    const forget = async () => {
      await s.db.deleteFrom('api_keys').where('account_id', '=', account.id).execute();
    };
    return { hashes: [a, b, c].map(hashApiKey) as [string, string, string], forget };
  }

  test('a flood of unknown hashes does not evict a known key', async () => {
    const { hashes, forget } = await keys();
    const cache = new KeyCache(s.db, { maxEntries: 2, maxUnknownEntries: 2, now: () => 0 });
    assert.ok(await cache.lookup(hashes[0]));
    for (let i = 0; i < 10; i++) assert.equal(await cache.lookup(randomBytes(32).toString('hex')), null);
    await forget();
    assert.ok(await cache.lookup(hashes[0]), 'still served from the cache');
  });

  test('the least recently used known key goes first', async () => {
    const { hashes, forget } = await keys();
    const [a, b, c] = hashes;
    const cache = new KeyCache(s.db, { maxEntries: 2, now: () => 0 });
    await cache.lookup(a);
    await cache.lookup(b);
    await cache.lookup(a); // a is now the most recently used
    await cache.lookup(c); // evicts b, not a (the older insertion)
    await forget();
    assert.ok(await cache.lookup(a), 'a kept');
    assert.equal(await cache.lookup(b), null, 'b was evicted: looked up again, and gone');
  });
});
