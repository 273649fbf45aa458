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

describe('metrics', () => {
  it('are not served on the public port unless BALCAO_METRICS_PUBLIC=true', async () => {
    const s = await startTestServer();
    try {
      const res = await fetch(`${s.url}/metrics`);
      assert.equal(res.status, 404);
      await res.arrayBuffer();
    } finally {
      await s.close();
    }
  });

  it('count requests by operation and status, and report the rate-limit store', async () => {
    const s = await startTestServer({ env: { BALCAO_METRICS_PUBLIC: 'true' } });
    try {
      const { key } = await s.createAccountWithKey();
      await s.request('GET', '/v1/me', { key });
      await s.request('GET', '/v1/me');
      const res = await fetch(`${s.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const text = await res.text();
      assert.match(text, /balcao_http_requests_total\{operation="me.get",method="GET",status="200"\} 1/);
      assert.match(text, /balcao_http_requests_total\{operation="me.get",method="GET",status="401"\} 1/);
      assert.match(text, /# TYPE balcao_http_request_duration_seconds histogram/);
      assert.match(text, /balcao_http_request_duration_seconds_bucket\{le="[0-9.]+",operation="me.get"\}/);
      assert.match(text, /balcao_http_request_duration_seconds_bucket\{le="\+Inf",operation="me.get"\} 2/);
      assert.match(text, /balcao_http_request_duration_seconds_count\{operation="me.get"\} 2/);
      assert.match(text, /balcao_http_requests_in_flight \d+/);
      assert.match(text, /balcao_rate_limit_store_healthy\{store="memory"\} 1/);
    } finally {
      await s.close();
    }
  });
});
