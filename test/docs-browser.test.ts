// /docs in a real browser: Debian's headless Chromium, driven by playwright-core (which downloads nothing), loads
// the reference as an integrator would, with the description served at its public address. It checks that the
// console stays free of errors (Scalar's own "document validation errors" included), that every tag of the
// description is listed, and that "Test Request" on GET /v1/me, given a key, gets a 200. The page is kept as
// artifacts/docs-reference.png (CI keeps artifacts/).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { startTestServer, type TestServer } from './helpers/harness.ts';

/** Where Debian installs its browser (`apt-get install chromium`); BALCAO_CHROMIUM names another. */
const CHROMIUM_PATHS = [process.env.BALCAO_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
/** Under the checkout (npm test runs from its root), where CI collects what it keeps. */
const ARTIFACTS = path.resolve('artifacts');
/** The harness's public address: the description names it as its server, the browser reaches the test server there. */
const PUBLIC_URL = 'http://balcao.test';
/** Bounds of the waits on a busy machine (Scalar reads a quarter-megabyte description), not timings under test. */
const PAGE_WAIT_MS = 90_000;

describe('/docs in headless Chromium', () => {
  let s: TestServer;
  let browser: Browser;
  before(async () => {
    const executablePath = CHROMIUM_PATHS.find((p) => existsSync(p));
    assert.ok(executablePath, `no Chromium at ${CHROMIUM_PATHS.join(', ')}: apt-get install chromium (or set BALCAO_CHROMIUM)`);
    s = await startTestServer({ env: { BALCAO_PUBLIC_URL: PUBLIC_URL } });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  after(async () => {
    await browser?.close();
    await s?.close();
  });

  test('loads without console errors, lists every tag, and "Test Request" on GET /v1/me answers 200', async () => {
    const { key } = await s.createAccountWithKey();
    const tags = ((await s.request('GET', '/v1/openapi.json')).body.tags as { name: string }[]).map((t) => t.name);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(PAGE_WAIT_MS);
    // The browser asks the public address; the test server answers, as a deployment's proxy would.
    await page.route(`${PUBLIC_URL}/**`, (route) => route.continue({ url: route.request().url().replace(PUBLIC_URL, s.url) }));
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.text().includes('validation errors')) problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));

    await page.goto(`${PUBLIC_URL}/docs#tag/me/GET/v1/me`);
    const tryIt = page.getByRole('button', { name: 'Test Request (get /v1/me)' });
    await tryIt.waitFor();
    for (const tag of tags) assert.ok((await page.getByText(tag, { exact: true }).count()) > 0, `tag ${tag} listed`);

    await tryIt.click();
    await page.getByPlaceholder('Token').last().fill(key);
    const answered = page.waitForResponse((response) => response.url().endsWith('/v1/me'));
    await page.getByRole('button', { name: /Send get request/ }).click();
    const response = await answered;
    assert.equal(response.status(), 200, await response.text());
    assert.equal((await response.json()).data.key_prefix, 'live');
    await page.getByText('200 OK').first().waitFor();

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-reference.png') });
    assert.deepEqual(problems, [], 'the console stays clean');
  });
});
