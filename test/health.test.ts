// Liveness and readiness endpoints.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';

describe('health', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  it('is live and ready without authentication, reporting the database and the rate-limit store', async () => {
    const live = await s.request('GET', '/health/live');
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: 'ok' });
    const ready = await s.request('GET', '/health/ready');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(ready.body.database, { engine: process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite', healthy: true });
    assert.equal(ready.body.rate_limit_store.healthy, true);
    assert.ok(ready.headers.get('x-request-id'));
  });
});
