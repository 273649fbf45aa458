// kill -9 of `balcao serve` while a webhook is in flight and writes are running: after a restart
// the delivery goes out (same webhook-id), and every change that committed has its event.
// Ends with the operator's `balcao webhooks list`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { balcaoJson, type ScratchEnv, scratchEnv, startServe } from './helpers/cli.ts';

import { startReceiver } from './helpers/webhook-receiver.ts';
import { until } from './helpers/poll.ts';
import { received, seedAccount } from './helpers/serve-process.ts';

describe('webhooks survive kill -9', () => {
  let scratch: ScratchEnv;
  before(async () => {
    scratch = await scratchEnv();
  });
  after(() => scratch.cleanup());

  it('delivers after a restart what was in flight when the server was killed, and keeps changes and events together', async () => {
    // The first request is held open (in flight when the server dies); later ones succeed.
    const receiver = await startReceiver((_r, i) => (i === 0 ? 'hang' : 200));
    const env = {
      ...scratch.env,
      BALCAO_WEBHOOK_ALLOW_PRIVATE: '1',
      BALCAO_WEBHOOK_RETRY_SCHEDULE: '0.1,0.1',
      BALCAO_WEBHOOK_TIMEOUT_SECONDS: '1',
    };
    try {
      const { accountId, key } = await seedAccount(scratch.env.DATABASE_URL, scratch.env.BALCAO_DATA_DIR);
      const call = (url: string, method: string, path: string, body?: unknown) =>
        fetch(url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });

      // Metrics on their own listener: the kill waits until the racing writes have reached the server.
      let server = await startServe('serve', { ...env, BALCAO_METRICS_PORT: '0' });
      const ep = await call(server.url, 'POST', '/v1/webhook-endpoints', { url: receiver.url, enabled_events: ['customer.created'] });
      assert.equal(ep.status, 201);
      const endpointId = ((await ep.json()) as { data: { id: string } }).data.id;
      assert.equal((await call(server.url, 'POST', '/v1/customers', { full_name: 'First', email: 'f@example.com' })).status, 201);
      await receiver.until((r) => r.length >= 1);
      const inFlight = receiver.received[0]?.id;

      // Writes racing the kill: some commit, some do not; none may be left without its event.
      const racing = Array.from({ length: 10 }, (_, i) =>
        call(server.url, 'POST', '/v1/customers', { full_name: `R${i}`, email: `r${i}@example.com` }).catch(() => null),
      );
      await until('a racing write reached the server', () => received(server.announced.metrics_url, 'customers.create'), {
        done: (n) => n >= 2,
        everyMs: 5,
      });
      server.child.kill('SIGKILL');
      await new Promise((resolve) => server.child.once('exit', resolve));
      await Promise.all(racing);

      server = await startServe('serve', env);
      try {
        await receiver.until((r) => r.filter((x) => x.id === inFlight).length >= 2, 30_000);
        const customers = (await (await call(server.url, 'GET', '/v1/customers?limit=100')).json()) as { data: { id: string }[] };
        const events = (await (await call(server.url, 'GET', '/v1/events?limit=100&filter[type][eq]=customer.created')).json()) as {
          data: { data: { object: { id: string } } }[];
        };
        assert.deepEqual(events.data.map((e) => e.data.object.id).sort(), customers.data.map((c) => c.id).sort());
        // Every committed customer.created reaches the receiver once the restarted worker catches up.
        await receiver.until((r) => new Set(r.map((x) => x.id)).size >= customers.data.length, 30_000);
        // The receiver counts a delivery when it arrives; the worker records it once the answer is back.
        await until('the in-flight delivery is recorded as succeeded', async () => {
          const deliveries = (await (await call(server.url, 'GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`)).json()) as {
            data: { event_id: string; status: string }[];
          };
          return deliveries.data.some((d) => d.event_id === inFlight && d.status === 'succeeded');
        });
      } finally {
        await server.stop();
      }
      // The operator's view: the endpoint, never its secret; none in test mode.
      const listed = await balcaoJson(['webhooks', 'list', '--account', accountId], env);
      assert.deepEqual(
        listed.data.map((e: { id: string }) => e.id),
        [endpointId],
      );
      assert.equal(JSON.stringify(listed).includes('whsec_'), false);
      assert.deepEqual((await balcaoJson(['webhooks', 'list', '--account', accountId, '--test'], env)).data, []);
    } finally {
      await receiver.close();
    }
  });
});
