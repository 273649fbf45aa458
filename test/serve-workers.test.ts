// `balcao serve --workers N`: several processes on one port over PostgreSQL, rate limits exact
// across them (counted in Redis), every worker stopped on SIGTERM; a clear refusal otherwise.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { balcao, balcaoJson, type ScratchEnv, scratchEnv, startServe } from './helpers/cli.ts';
import { startTestRedis, type TestRedis } from './helpers/redis-server.ts';

/** The live child processes of `pid`. */
const childrenOf = (pid: number): number[] => {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};

describe('balcao serve --workers', () => {
  let scratch: ScratchEnv;
  let env: Record<string, string>;
  let redis: TestRedis;
  before(async () => {
    scratch = await scratchEnv();
    env = scratch.env;
    redis = await startTestRedis();
  });
  after(async () => {
    await redis.close();
    await scratch.cleanup();
  });

  it('refuses several workers on the embedded database, and without REDIS_URL; on PostgreSQL serves with exact limits and stops every worker', async () => {
    const embedded = await balcao(['serve', '--workers', '2'], { BALCAO_DATA_DIR: env.BALCAO_DATA_DIR! });
    assert.equal(embedded.code, 1);
    assert.match(embedded.stderr, /^balcao: 2 workers need PostgreSQL \(DATABASE_URL\).*\n$/);
    const fromEnv = await balcao(['serve'], { BALCAO_DATA_DIR: env.BALCAO_DATA_DIR!, BALCAO_WORKERS: '3' });
    assert.match(fromEnv.stderr, /3 workers need PostgreSQL/);
    assert.match((await balcao(['serve', '--workers', 'two'], env)).stderr, /--workers must be a whole number/);
    if (!env.DATABASE_URL) return;

    assert.match((await balcao(['serve', '--workers', '2'], env)).stderr, /2 workers need REDIS_URL/);
    const account = await balcaoJson(
      ['accounts', 'create', '--name', 'Duas', '--plan', 'pro', '--modules', 'clientes', '--rate-limits', 'burst=1000,read=10'],
      env,
    );
    const key = await balcaoJson(['keys', 'create', '--account', account.id, '--name', 'k', '--scopes', 'customers:read'], env);
    const server = await startServe('serve', { ...env, REDIS_URL: redis.url, BALCAO_METRICS_PORT: '0' }, ['--workers', '2']);
    try {
      assert.equal(server.announced.workers, 2);
      const workers = childrenOf(server.child.pid!);
      assert.equal(workers.length, 2);
      // The read layer counts per clock minute (fixed windows): the 14 requests start where they fit in one.
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 100));
      // A new connection per request, so the requests are spread over both workers.
      const statuses: number[] = [];
      for (let i = 0; i < 14; i++) {
        const res = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${key.key}`, connection: 'close' } });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      assert.deepEqual(statuses, [...Array(10).fill(200), ...Array(4).fill(429)]);
      // The primary's metrics listener answers with both workers' requests summed.
      const scraped = await (await fetch(server.announced.metrics_url)).text();
      const count = (status: number) =>
        Number(
          scraped.match(
            new RegExp(`^balcao_http_requests_total\\{operation="me.get",method="GET",status="${status}"\\} (\\d+)$`, 'm'),
          )?.[1],
        );
      assert.equal(count(200), 10);
      assert.equal(count(429), 4);
    } finally {
      await server.stop();
    }
    assert.equal(server.child.exitCode, 0, 'the primary exits cleanly once every worker has stopped');
    assert.deepEqual(childrenOf(server.child.pid!), []);
  });
});
