// /metrics apart from the API (docs/operations.md, "Metrics"): `balcao serve` with BALCAO_METRICS_PORT serves
// GET /metrics on a listener of its own, on loopback, and the public port answers 404 there.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import { metric, type Scratch, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';

const scratches: Scratch[] = [];
after(async () => {
  for (const s of scratches) await s.cleanup();
});

describe('the metrics listener', () => {
  it('serves /metrics on its own loopback port, not on the public one', async () => {
    const scratch = await scratchWithKey();
    scratches.push(scratch);
    const server = await spawnServe(scratch.env);
    try {
      const agent = new http.Agent({ keepAlive: false });
      assert.match(server.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      assert.notEqual(new URL(server.metricsUrl).port, new URL(server.url).port);
      for (let i = 0; i < 3; i++) assert.equal((await send(server.url, 'GET', '/v1/me', { key: scratch.key, agent })).status, 200);
      assert.equal(await metric(server.metricsUrl, 'balcao_http_requests_total', 'operation="me.get",method="GET",status="200"'), 3);
      const scraped = await send(server.metricsUrl, 'GET', server.metricsUrl, { agent });
      assert.match(scraped.headers['content-type'] ?? '', /^text\/plain/);
      assert.match(scraped.text, /balcao_rate_limit_store_healthy\{store="memory"\} 1/);
      assert.match(scraped.text, /balcao_process_resident_memory_bytes/);
      // Only GET /metrics there; and the public listener does not serve it.
      assert.equal((await send(server.metricsUrl, 'GET', '/v1/me', { agent })).status, 404);
      assert.equal((await send(server.url, 'GET', '/metrics', { agent })).status, 404);
    } finally {
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
    }
  });
});
