// The human documentation: /docs (Scalar, served by this server) and one page per error type
// at the URL a problem's `type` names. All public and not rate-limited.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ERROR_CATALOGUE, ERROR_CODES } from '../src/errors/catalogue.ts';
import { startTestServer, type TestServer } from './helpers/harness.ts';

const attributes = (html: string, name: 'src' | 'href') =>
  [...html.matchAll(new RegExp(`${name}="([^"]*)"`, 'g'))].map((m) => m[1] as string);

describe('documentation pages', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('/docs answers 200 HTML that loads its script and the document from this server only', async () => {
    const res = await s.request('GET', '/docs');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(res.headers.get('x-request-id'));
    const scripts = attributes(res.text, 'src');
    assert.equal(scripts.length, 1);
    for (const ref of [...scripts, ...attributes(res.text, 'href')]) {
      assert.equal(new URL(ref, `${s.url}/docs`).origin, s.url, `${ref} must come from this server`);
    }
    assert.doesNotMatch(res.text, /https?:\/\//, 'no absolute URL (CDN, fonts) in the page');
    assert.match(res.text, /Scalar\.createApiReference\('#app', \{"url":"\.\/v1\/openapi\.json"/);
    assert.match(res.text, /"withDefaultFonts":false/);
    assert.match(res.text, /"telemetry":false/);

    const script = await fetch(new URL(scripts[0] as string, `${s.url}/docs`));
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^application\/javascript/);
    const js = await script.text();
    assert.ok(js.length > 1_000_000);
    assert.match(js.slice(0, 600), /@scalar\/api-reference \d+\.\d+\.\d+/);
  });

  test('/docs/ leads to /docs', async () => {
    const res = await fetch(`${s.url}/docs/`, { redirect: 'manual' });
    assert.equal(res.status, 301);
    assert.equal(new URL(res.headers.get('location') ?? '', `${s.url}/docs/`).pathname, '/docs');
  });

  test('/errors/<code> answers 200 HTML for every code, naming it with its status, meaning and remedy', async () => {
    for (const code of ERROR_CODES) {
      const res = await s.request('GET', `/errors/${code}`);
      assert.equal(res.status, 200, code);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const entry = ERROR_CATALOGUE[code];
      assert.ok(res.text.includes(`<code>${code}</code>`), code);
      assert.ok(res.text.includes(`HTTP ${entry.status}`), code);
      assert.ok(res.text.includes(`http://balcao.test/errors/${code}`), code);
      assert.match(res.text, /What it means[\s\S]*What to do/);
    }
  });

  test('/errors lists every type with a link to its page', async () => {
    const res = await s.request('GET', '/errors');
    assert.equal(res.status, 200);
    const links = attributes(res.text, 'href');
    for (const code of ERROR_CODES) assert.ok(links.includes(`errors/${code}`), code);
  });

  test('the type URL of a real problem is the path of its page', async () => {
    const problem = await s.request('GET', '/v1/me');
    assert.equal(problem.status, 401);
    const page = await s.request('GET', new URL(problem.body.type).pathname);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('<code>invalid_token</code>'));
  });

  test('/errors/unknown is a 404 problem', async () => {
    const res = await s.request('GET', '/errors/unknown');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(res.body.type, 'http://balcao.test/errors/not_found');
    assert.equal(res.body.instance, '/errors/unknown');
  });

  test('the docs and error pages are public and not rate-limited, with or without a key', async () => {
    for (let i = 0; i < 35; i++) {
      const res = await s.request('GET', i % 2 ? '/errors/validation' : '/docs', i % 3 ? {} : { headers: { authorization: 'Bearer x' } });
      assert.equal(res.status, 200, `request ${i}`);
      assert.equal(res.headers.get('x-ratelimit-limit'), null);
    }
  });

  test('the description is public API: it counts against the anonymous allowance of the IP (30/min)', async () => {
    // A fixed clock: the windows are aligned to the minute, and 31 requests on a loaded machine can straddle one.
    const fresh = await startTestServer({ now: () => Date.UTC(2026, 0, 1, 12, 0, 30) });
    try {
      for (let i = 0; i < 30; i++) assert.equal((await fresh.request('GET', '/v1/openapi.json')).status, 200, `request ${i}`);
      const refused = await fresh.request('GET', '/v1/openapi.json');
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '60');
      assert.equal((await fresh.request('GET', '/errors/validation')).status, 200);
    } finally {
      await fresh.close();
    }
  });
});
