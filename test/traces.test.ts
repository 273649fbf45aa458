// OpenTelemetry traces against a real OTLP/HTTP receiver in the test: the tree of spans of a request (server span,
// authentication, rate-limit store, statements), its names and attributes, a caller's `traceparent` continued,
// `trace_id` in the request's log line, the long poll's and a webhook delivery's spans with the delivery's
// `traceparent`, http/json and http/protobuf, and nothing secret or personal in anything exported.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';
import { until } from './helpers/poll.ts';
import { createRateLimiter } from '../src/http/rate-limit.ts';
import { recordingLogger } from './helpers/recording-logger.ts';
import { startTestRedis } from './helpers/redis-server.ts';
import { scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

interface Export {
  contentType: string;
  body: Buffer;
}

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number };
  service: unknown;
}

/** A collector's OTLP/HTTP traces endpoint on 127.0.0.1: keeps every export as received. */
async function startCollector(): Promise<{ url: string; exports: Export[]; close(): Promise<void> }> {
  const exports: Export[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces')
        exports.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Every span of the http/json exports, its attributes as a plain object. */
function spansOf(exports: Export[]): ExportedSpan[] {
  const spans: ExportedSpan[] = [];
  for (const e of exports) {
    if (!e.contentType.includes('json')) continue;
    const payload = JSON.parse(e.body.toString('utf8'));
    for (const rs of payload.resourceSpans ?? []) {
      const service = plain(rs.resource?.attributes)['service.name'];
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            attributes: plain(s.attributes),
            status: s.status ?? {},
            service,
          });
    }
  }
  return spans;
}

function plain(attributes: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) {
    const v = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
    out[key] = typeof v === 'string' && key.endsWith('status_code') ? Number(v) : v;
  }
  return out;
}

/** A Writable the app's logger writes its JSON lines to. */
function lineSink(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    stream,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

const SERVER = 2;
const CLIENT = 3;

const tracingEnv = (collector: string, protocol: 'http/json' | 'http/protobuf') => ({
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_ENDPOINT: collector,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_BSP_SCHEDULE_DELAY: '50',
  BALCAO_WEBHOOK_ALLOW_PRIVATE: '1',
  BALCAO_WEBHOOK_TIMEOUT_SECONDS: '5',
});

describe('traces over http/json', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: Receiver;
  let s: TestServer;
  let logs: ReturnType<typeof lineSink>;
  let key: string;
  let accountId: string;
  let secret: string;
  const keysUsed: string[] = [];
  const person = {
    full_name: `Maria Traceable ${randomBytes(3).toString('hex')}`,
    email: `maria.${randomBytes(3).toString('hex')}@example.com`,
    phone: '+55 11 98765-4321',
    document: '529.982.247-25',
  };

  before(async () => {
    collector = await startCollector();
    receiver = await startReceiver();
    logs = lineSink();
    s = await startTestServer({
      env: { ...tracingEnv(collector.url, 'http/json'), OTEL_SERVICE_NAME: 'balcao-under-test' },
      logger: { level: 'info', stream: logs.stream },
    });
    const made = await s.createAccountWithKey();
    key = made.key;
    accountId = made.account.id;
    const endpoint = await s.request('POST', '/v1/webhook-endpoints', {
      key,
      body: { url: receiver.url, enabled_events: ['customer.created'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    secret = endpoint.body.data.secret;
  });

  after(async () => {
    await s?.close();
    await receiver?.close();
    await collector?.close();
  });

  /** The spans of `traceId`, once its server span (the last of a request's to end) has been exported. */
  const traceOf = (traceId: string, serverName: string) =>
    until(
      `the server span ${serverName} of trace ${traceId} is exported`,
      () => spansOf(collector.exports).filter((span) => span.traceId === traceId),
      { done: (spans) => spans.some((span) => span.kind === SERVER && span.name === serverName) },
    );

  it('a request continues the caller’s traceparent: server span, authentication, rate limit and statements beneath it', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    // A key used for the first time: its lookup reaches the database.
    const fresh = await s.createKey(accountId);
    keysUsed.push(fresh.key);
    const res = await s.request('POST', '/v1/customers', {
      key: fresh.key,
      body: person,
      headers: { traceparent: `00-${traceId}-${callerSpan}-01`, 'x-request-id': 'traced-request-1' },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers.get('x-request-id'), 'traced-request-1', 'the request id is the caller’s, as without traces');

    const spans = await traceOf(traceId, 'POST /v1/customers');
    const server = spans.find((span) => span.kind === SERVER) as ExportedSpan;
    assert.equal(server.parentSpanId, callerSpan, 'the server span is a child of the caller’s span');
    assert.equal(server.service, 'balcao-under-test');
    assert.equal(server.attributes['http.request.method'], 'POST');
    assert.equal(server.attributes['http.route'], '/v1/customers');
    assert.equal(server.attributes['http.response.status_code'], 201);
    assert.equal(server.attributes['balcao.operation_id'], 'customers.create');
    assert.equal(server.attributes['balcao.request_id'], 'traced-request-1');

    const children = spans.filter((span) => span.parentSpanId === server.spanId);
    const auth = children.find((span) => span.name === 'authenticate');
    assert.ok(auth, `an authentication span under the server span; got ${spans.map((x) => x.name).join(', ')}`);
    const rateLimit = children.find((span) => span.name === 'rate-limit');
    assert.ok(rateLimit, 'a rate-limit span under the server span');
    assert.equal(rateLimit.attributes['balcao.rate_limit.store'], 'memory');
    assert.equal(rateLimit.attributes['balcao.rate_limit.outcome'], 'allowed');
    const statements = children.filter((span) => span.attributes['db.system.name'] === 'postgresql');
    assert.ok(
      statements.some((span) => span.name === 'INSERT customers'),
      `the insert is a span under the server span; got ${statements.map((x) => x.name).join(', ')}`,
    );
    // The key's first use is a cache miss: its lookup is a statement under the authentication span.
    assert.ok(
      spans.some((span) => span.parentSpanId === auth.spanId && span.attributes['db.system.name'] === 'postgresql'),
      'the key lookup’s statement is under the authentication span',
    );
    for (const statement of spans.filter((span) => span.attributes['db.statement'] !== undefined)) {
      assert.equal(statement.kind, CLIENT);
      assert.equal(statement.attributes['db.statement'], statement.attributes['db.query.text']);
      assert.match(statement.name, /^[A-Z]+( [a-z_.]+)?$/, 'named by the statement’s kind and table');
    }
    const insert = statements.find((span) => span.name === 'INSERT customers') as ExportedSpan;
    assert.match(String(insert.attributes['db.statement']), /\$1/, 'the statement’s shape, parameters as placeholders');

    // The request's log line carries the trace id.
    const line = await until('the request’s log line is written', () =>
      logs.lines().find((l) => l.msg === 'request' && l.reqId === 'traced-request-1'),
    );
    assert.ok(line);
    assert.equal(line.trace_id, traceId);
  });

  it('a request without traceparent starts a trace of its own, named by its route template', async () => {
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Another Person', phone: '1' } });
    const id = created.body.data.id;
    const res = await s.request('GET', `/v1/customers/${id}`, { key, headers: { 'x-request-id': 'traced-request-2' } });
    assert.equal(res.status, 200);
    const line = await until('the GET’s log line is written', () => logs.lines().find((l) => l.reqId === 'traced-request-2'));
    assert.ok(line);
    assert.match(String(line.trace_id), /^[0-9a-f]{32}$/);
    const spans = await traceOf(String(line.trace_id), 'GET /v1/customers/:id');
    const server = spans.find((span) => span.kind === SERVER) as ExportedSpan;
    assert.equal(server.parentSpanId, '', 'a trace’s first span');
    assert.equal(server.attributes['http.route'], '/v1/customers/:id');
    assert.ok(!JSON.stringify(spans).includes(id) || server.attributes['http.route'] !== undefined);
  });

  it('the long poll of GET /v1/events has its own span under the request’s', async () => {
    const first = await s.request('GET', '/v1/events?sort=created_at', { key });
    assert.equal(first.status, 200, first.text);
    const cursor = first.body.pagination.next_cursor;
    const traceId = randomBytes(16).toString('hex');
    const polled = await s.request('GET', `/v1/events?sort=created_at&wait=1&cursor=${encodeURIComponent(cursor)}`, {
      key,
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    assert.equal(polled.status, 200, polled.text);
    const spans = await traceOf(traceId, 'GET /v1/events');
    const server = spans.find((span) => span.kind === SERVER) as ExportedSpan;
    const poll = spans.find((span) => span.name === 'events long poll');
    assert.ok(poll, `a long-poll span; got ${spans.map((x) => x.name).join(', ')}`);
    assert.equal(poll.parentSpanId, server.spanId);
    assert.equal(poll.attributes['balcao.events.wait_seconds'], 1);
  });

  it('a webhook delivery attempt is a span, and its POST carries that span’s traceparent', async () => {
    await receiver.until((received) => received.some((r) => r.body.includes(person.email)));
    const delivery = receiver.received.find((r) => r.body.includes(person.email));
    const traceparent = String(delivery?.headers.traceparent);
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent);
    assert.ok(match, `a sampled W3C traceparent on the delivery; got ${traceparent}`);
    const [, traceId, spanId] = match;
    const spans = await until(
      'the delivery’s span is exported',
      () => spansOf(collector.exports).filter((span) => span.traceId === traceId),
      { done: (found) => found.some((span) => span.spanId === spanId) },
    );
    const attempt = spans.find((span) => span.spanId === spanId) as ExportedSpan;
    assert.equal(attempt.name, 'webhook delivery');
    assert.equal(attempt.kind, CLIENT);
    assert.equal(attempt.attributes['http.response.status_code'], 200);
    assert.equal(attempt.attributes['balcao.event.type'], 'customer.created');
    assert.equal(attempt.attributes['balcao.webhook.attempt'], 1);
    assert.equal(attempt.attributes['balcao.webhook.outcome'], 'succeeded');
  });

  it('nothing exported holds a key, a secret, a body or the person’s data', async () => {
    // Whatever is still buffered is sent first.
    await until('every span so far is exported', () => collector.exports.length, { done: (n) => n > 0 });
    const exported = collector.exports.map((e) => e.body.toString('utf8')).join('\n');
    for (const [what, value] of Object.entries({
      'an API key': key,
      'the fresh API key': keysUsed[0] as string,
      'the webhook secret': secret,
      'the authorization scheme': 'Bearer',
      ...person,
    }))
      assert.ok(!exported.includes(value), `${what} is in an exported span`);
    assert.ok(!exported.includes(receiver.url), 'the endpoint’s URL is in an exported span');
  });
});

describe('traces over http/protobuf', () => {
  it('exports protobuf to the configured endpoint, and carries no key', async () => {
    const collector = await startCollector();
    const s = await startTestServer({
      env: { ...tracingEnv(collector.url, 'http/protobuf'), OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' },
    });
    try {
      const { key } = await s.createAccountWithKey();
      assert.equal((await s.request('GET', '/v1/me', { key })).status, 200);
      const exported = await until(
        'a protobuf export with the request’s server span',
        () => collector.exports.find((e) => e.body.includes('GET /v1/me')),
        { done: Boolean },
      );
      assert.equal(exported?.contentType, 'application/x-protobuf');
      assert.ok(!collector.exports.some((e) => e.body.includes(key)), 'the key is in an exported span');
    } finally {
      await s.close();
      await collector.close();
    }
  });

  it('off (no OTEL_TRACES_EXPORTER): nothing is exported, no trace id is logged, deliveries carry no traceparent', async () => {
    const collector = await startCollector();
    const receiver = await startReceiver();
    const logs = lineSink();
    const s = await startTestServer({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, BALCAO_WEBHOOK_ALLOW_PRIVATE: '1' },
      logger: { level: 'info', stream: logs.stream },
    });
    try {
      const { key } = await s.createAccountWithKey();
      const endpoint = await s.request('POST', '/v1/webhook-endpoints', { key, body: { url: receiver.url, enabled_events: ['*'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
      assert.equal(
        (await s.request('POST', '/v1/customers', { key, body: { full_name: 'Untraced', phone: '1' }, headers: { traceparent } })).status,
        201,
      );
      await receiver.until((received) => received.length > 0);
      assert.equal(receiver.received[0]?.headers.traceparent, undefined);
      assert.equal(s.app.tracing, undefined);
      const lines = logs.lines().filter((l) => l.msg === 'request');
      assert.ok(lines.length > 0);
      assert.ok(lines.every((l) => !('trace_id' in l)));
      assert.equal(collector.exports.length, 0);
    } finally {
      await s.close();
      await receiver.close();
      await collector.close();
    }
  });
});

describe('traces of `balcao serve`', () => {
  it('a graceful stop sends the spans still waiting in the batch before the process exits', async () => {
    const collector = await startCollector();
    const scratch = await scratchWithKey();
    try {
      // A batch sent only every 10 minutes: what arrives was sent by the stop.
      const served = await spawnServe({ ...scratch.env, ...tracingEnv(collector.url, 'http/json'), OTEL_BSP_SCHEDULE_DELAY: '600000' });
      const traceId = randomBytes(16).toString('hex');
      const answer = await send(served.url, 'GET', '/v1/me', {
        key: scratch.key,
        headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      });
      assert.equal(answer.status, 200, answer.text);
      served.child.kill('SIGTERM');
      assert.equal(await served.exited, 0, served.logs());
      const spans = spansOf(collector.exports).filter((span) => span.traceId === traceId);
      assert.ok(
        spans.some((span) => span.kind === SERVER && span.name === 'GET /v1/me'),
        `the request's server span was sent on stop; got ${spans.map((x) => x.name).join(', ')}`,
      );
      assert.equal(spans.find((span) => span.kind === SERVER)?.service, 'balcao', 'service.name defaults to balcao');
      const line = served
        .logs()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === 'request');
      assert.equal(line?.trace_id, traceId, 'the served log line carries the trace id');
      assert.ok(!collector.exports.some((e) => e.body.includes(scratch.key)), 'the key is in an exported span');
    } finally {
      await scratch.cleanup();
      await collector.close();
    }
  });
});

describe('traces of the Redis rate-limit store', () => {
  it('a charge counted in Redis is a span saying so; a refusal is its outcome, not an error', async () => {
    const redis = await startTestRedis();
    const collector = await startCollector();
    // One clock for the server and its limiter: both requests fall in the same minute.
    const at = Date.UTC(2031, 4, 6, 12, 0, 30);
    const now = () => at;
    const s = await startTestServer({
      env: tracingEnv(collector.url, 'http/json'),
      now,
      rateLimiter: createRateLimiter({ redisUrl: redis.url, keyPrefix: redis.newPrefix(), now, logger: recordingLogger().logger }),
    });
    try {
      const { key } = await s.createAccountWithKey({ rateLimits: { requests_per_minute_read: 1 } });
      const traces = [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')];
      const statuses: number[] = [];
      for (const traceId of traces) {
        const headers = { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
        statuses.push((await s.request('GET', '/v1/me', { key, headers })).status);
      }
      assert.deepEqual(statuses, [200, 429]);
      const [allowed, refused] = await Promise.all(
        traces.map((traceId) =>
          until(`the rate-limit span of trace ${traceId} is exported`, () =>
            spansOf(collector.exports).find((span) => span.traceId === traceId && span.name === 'rate-limit'),
          ),
        ),
      );
      assert.equal(allowed?.attributes['balcao.rate_limit.store'], 'redis');
      assert.equal(allowed?.attributes['balcao.rate_limit.outcome'], 'allowed');
      assert.equal(refused?.attributes['balcao.rate_limit.outcome'], 'refused');
      assert.notEqual(refused?.status.code, 2, 'a refusal does not mark the span as failed');
    } finally {
      await s.close();
      await collector.close();
      await redis.close();
    }
  });
});
