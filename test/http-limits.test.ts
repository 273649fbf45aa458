// The framework's own refusals are problem+json with X-Request-Id like every other error: an over-long path id
// (a 404), a bad percent-escape (400), a header overflow or too many headers (431), a client too slow to send
// its body (408). DELETE ignores a JSON content type sent with no body. Raw sockets where fetch cannot go.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from './helpers/harness.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` bytes as given and reads the whole answer (the server closes or the body is complete). */
function rawRequest(url: string, request: string | Buffer, hold = false): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
    if (!hold) socket.end();
  });
}

function assertProblem(res: { status: number; headers: Record<string, string> | Headers; body: string }, status: number, code: string) {
  const get = (name: string) => (res.headers instanceof Headers ? res.headers.get(name) : res.headers[name]);
  assert.equal(res.status, status, res.body);
  assert.match(get('content-type') ?? '', /^application\/problem\+json/);
  const requestId = get('x-request-id');
  assert.ok(requestId, 'X-Request-Id is sent');
  const body = JSON.parse(res.body);
  assert.equal(body.type, `http://balcao.test/errors/${code}`);
  assert.equal(body.status, status);
  assert.equal(body.request_id, requestId);
}

describe('HTTP limits and the framework errors', () => {
  let s: TestServer;
  let key: string;
  before(async () => {
    s = await startTestServer({ serverLimits: { requestTimeoutMs: 1_000, headersTimeoutMs: 1_000, timeoutCheckEveryMs: 200 } });
    ({ key } = await s.createAccountWithKey());
  });
  after(() => s.close());

  it('an over-long path id is a 404 not_found, authenticated and counted like any unknown id', async () => {
    const long = 'a'.repeat(5_000);
    const res = await s.request('GET', `/v1/customers/${long}`, { key });
    assertProblem({ ...res, body: res.text }, 404, 'not_found');
    assert.ok(res.headers.get('x-ratelimit-limit'), 'counted against the key');
    const anonymous = await s.request('GET', `/v1/customers/${long}`);
    assertProblem({ ...anonymous, body: anonymous.text }, 401, 'invalid_token');
  });

  it('a malformed percent-escape in the path is a 400 bad_request', async () => {
    const res = await fetch(`${s.url}/v1/customers/%zz`, { headers: { authorization: `Bearer ${key}` } });
    assertProblem({ status: res.status, headers: res.headers, body: await res.text() }, 400, 'bad_request');
  });

  it('headers over 16 KiB, or a URL over it, are a 431 header_too_large', async () => {
    const bigHeader = await rawRequest(s.url, `GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(40_000)}\r\n\r\n`);
    assertProblem(bigHeader, 431, 'header_too_large');
    const bigUrl = await rawRequest(s.url, `GET /v1/customers?q=${'u'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assertProblem(bigUrl, 431, 'header_too_large');
  });

  it('more than 100 header fields are a 431, not silently dropped', async () => {
    const many = Array.from({ length: 150 }, (_, i) => `X-H${i}: ${i}\r\n`).join('');
    const res = await rawRequest(
      s.url,
      `GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${many}Connection: close\r\n\r\n`,
    );
    assertProblem(res, 431, 'header_too_large');
    const fine = await s.request('GET', '/v1/me', {
      key,
      headers: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`x-h${i}`, 'v'])),
    });
    assert.equal(fine.status, 200);
  });

  it('a body sent too slowly is cut off with a 408 request_timeout (slowloris)', async () => {
    // Headers promise 100 bytes; one arrives, then nothing: the request timeout (1 s here) ends it.
    const res = await rawRequest(
      s.url,
      `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      true,
    );
    assertProblem(res, 408, 'request_timeout');
  });

  it('headers sent too slowly are cut off with a 408 too', async () => {
    const res = await rawRequest(s.url, 'GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Slow: 1', true);
    assertProblem(res, 408, 'request_timeout');
  });

  it('a broken request line is a 400 bad_request', async () => {
    const res = await rawRequest(s.url, 'THIS IS NOT HTTP\r\n\r\n');
    assertProblem(res, 400, 'bad_request');
  });

  it('DELETE with Content-Type: application/json and no body is a 204', async () => {
    const created = await s.request('POST', '/v1/customers', { key, body: { full_name: 'Ana', phone: '1' } });
    const res = await s.request('DELETE', `/v1/customers/${created.body.data.id}`, {
      key,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
  });
});
