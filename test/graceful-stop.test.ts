// SIGTERM on the real `balcao serve`: readiness turns false at once, the listener closes, the 100 requests in
// flight all complete (their keep-alive connections closed after the response), everything closes and the exit
// code is 0. The stop is bounded (BALCAO_SHUTDOWN_TIMEOUT_MS) and a second signal exits at once.
// Also: one access-log line per request, carrying ids and never a key or an Idempotency-Key value.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { item } from './helpers/write-fixtures.ts';
import { metric, received, type Scratch, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';
import { until } from './helpers/poll.ts';

const scratches: Scratch[] = [];
after(async () => {
  for (const s of scratches) await s.cleanup();
});

/** A request that never finishes sending its body: it stays in flight until the server gives up on it. */
function stuckUpload(url: string, key: string): net.Socket {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  socket.write(
    `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
  );
  return socket;
}

describe('graceful stop of balcao serve', () => {
  it('SIGTERM with 100 sales in flight: none dropped, not ready at once, connections closed after their response, exit 0', async () => {
    const scratch = await scratchWithKey();
    scratches.push(scratch);
    // 100 sales queue for 10 pooled connections on a loaded machine: the pool wait is not what is tested here.
    const server = await spawnServe({ ...scratch.env, BALCAO_DB_ACQUIRE_TIMEOUT_MS: '120000', BALCAO_DB_STATEMENT_TIMEOUT_MS: '120000' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
    const items = Array.from({ length: 20 }, () => item());
    // Every body's last byte is held back until the stop has begun, so all 100 are in flight, none answered, at SIGTERM.
    let finishBodies = () => {};
    const bodiesFinished = new Promise<void>((resolve) => {
      finishBodies = resolve;
    });
    const pending = Array.from({ length: 100 }, (_, i) =>
      send(server.url, 'POST', '/v1/sales', {
        key: scratch.key,
        agent,
        body: { items, notes: `stop-${i}` },
        headers: { 'idempotency-key': `stop-${i}`, 'x-request-id': `stop-${i}` },
        holdLastByteUntil: bodiesFinished,
      }),
    );
    await until('the server holds the 100 requests', async () => (await received(server.url, 'sales.create')) >= 100);
    const readinessAgent = new http.Agent({ keepAlive: true });
    // A kept-alive connection for readiness (its answer now depends on the busy pool: either is fine here).
    await send(server.url, 'GET', '/health/live', { agent: readinessAgent });
    server.child.kill('SIGTERM');
    // A signal is handled asynchronously: probe once the process says it has begun stopping.
    await until('the server begins stopping', async () => server.logs().includes('stopping: finishing the requests in flight'));
    // The readiness connection is kept alive: it sees the flag flip (or is closed, which also keeps the balancer away).
    const ready = await send(server.url, 'GET', '/health/ready', { agent: readinessAgent }).catch(() => undefined);
    if (ready) assert.equal(ready.status, 503, 'not ready once stopping');
    finishBodies();

    const answers = await Promise.all(pending);
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(100).fill(201),
    );
    for (const a of answers) assert.equal(a.headers.connection, 'close', 'keep-alive ends after the response');
    assert.equal(await server.exited, 0);
    await assert.rejects(send(server.url, 'GET', '/health/live', { agent: new http.Agent() }), 'the listener is closed');
    agent.destroy();
    readinessAgent.destroy();

    // One access-log line per request, with the ids and none of the secrets.
    const lines = server
      .logs()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const access = lines.filter((l) => l.msg === 'request' && /^stop-/.test(l.reqId));
    assert.equal(access.length, 100);
    for (const line of access) {
      assert.equal(line.op, 'sales.create');
      assert.equal(line.status, 201);
      assert.equal(line.account, scratch.accountId);
      assert.equal(line.key, scratch.keyId);
      assert.equal(line.mode, 'live');
      assert.equal(typeof line.ms, 'number');
      assert.ok(line.bytes > 0);
    }
    const all = server.logs();
    assert.doesNotMatch(all, new RegExp(scratch.key.split('_').pop() as string), 'no key secret in the logs');
    assert.doesNotMatch(all, /"stop-\d+".*idempotency|authorization/i);
    assert.equal(
      lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed').length,
      0,
      'no Fastify default request logs',
    );
  });

  it('the stop is bounded: a request that never completes is abandoned after BALCAO_SHUTDOWN_TIMEOUT_MS (exit 1)', async () => {
    const scratch = await scratchWithKey();
    scratches.push(scratch);
    const server = await spawnServe({ ...scratch.env, BALCAO_SHUTDOWN_TIMEOUT_MS: '1000' });
    const socket = stuckUpload(server.url, scratch.key);
    await until('the upload is in flight', async () => (await metric(server.url, 'balcao_http_requests_in_flight')) >= 2);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 1);
    socket.destroy();
  });

  it('a second signal exits at once', async () => {
    const scratch = await scratchWithKey();
    scratches.push(scratch);
    const server = await spawnServe(scratch.env);
    const socket = stuckUpload(server.url, scratch.key);
    await until('the upload is in flight', async () => (await metric(server.url, 'balcao_http_requests_in_flight')) >= 2);
    server.child.kill('SIGTERM');
    await until('the stop began', async () => server.logs().includes('stopping'));
    server.child.kill('SIGINT');
    assert.equal(await server.exited, 1);
    socket.destroy();
  });
});
