// The operator contract (DECISIONS part A) through the real `balcao` command.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { balcao, balcaoJson, balcaoLoads, type ScratchEnv, scratchEnv, startServe } from './helpers/cli.ts';
import { until } from './helpers/poll.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('balcao CLI', () => {
  let scratch: ScratchEnv;
  let env: Record<string, string>;
  before(async () => {
    // An empty data folder: the first command creates the embedded database itself, as on a new install.
    scratch = await scratchEnv({ fresh: true });
    env = scratch.env;
  });
  after(() => scratch.cleanup());

  it('migrate --json reports the applied migrations, then none', async () => {
    const files = fs
      .readdirSync(new URL('../migrations', import.meta.url))
      .filter((f) => f.endsWith('.sql'))
      .sort();
    const first = await balcaoJson(['migrate'], env);
    assert.deepEqual(first.applied, files);
    const again = await balcaoJson(['migrate'], env);
    assert.deepEqual(again.applied, []);
  });

  it('runs the bundled build, and a command loads only its own chunks', async () => {
    const help = await balcaoLoads(['--help'], env);
    assert.equal(help.code, 0);
    for (const command of ['serve', 'migrate', 'accounts', 'keys', 'import', 'webhooks', 'export', 'demo'])
      assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
    assert.ok(help.loaded.includes('dist/cli/main.js'), help.loaded.join('\n'));
    // Everything comes from the bundle: no source file, no package module, no command's chunk.
    assert.deepEqual(
      help.loaded.filter((file) => !/^(bin|dist)\//.test(file)),
      [],
    );
    assert.ok(help.loaded.length <= 12, help.loaded.join('\n'));

    const listed = await balcaoLoads(['accounts', 'list', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    // The HTTP application (Fastify, the routes, their schemas) is one chunk, which only serving loads.
    assert.deepEqual(
      listed.loaded.filter((file) => /^dist\/chunks\/app-/.test(file) || file.startsWith('src/')),
      [],
    );
    const embedded = listed.loaded.some((file) => file.includes('@electric-sql/pglite'));
    assert.equal(embedded, env.DATABASE_URL === undefined, listed.loaded.join('\n'));
  });

  it('accounts create/update/list print the documented JSON, with effective rate limits', async () => {
    const created = await balcaoJson(
      [
        'accounts',
        'create',
        '--name',
        'Pet Shop Au Au',
        '--plan',
        'starter',
        '--modules',
        'vendas,clientes',
        '--rate-limits',
        'burst=3,day=77',
      ],
      env,
    );
    assert.match(created.id, UUID);
    assert.deepEqual(
      { ...created, id: undefined },
      {
        id: undefined,
        name: 'Pet Shop Au Au',
        plan_code: 'starter',
        modules: ['clientes', 'vendas'],
        api_enabled: true,
        read_only: false,
        rate_limits: { burst_per_second: 3, requests_per_minute_read: 60, requests_per_minute_write: 30, requests_per_day_total: 77 },
      },
    );
    const updated = await balcaoJson(
      ['accounts', 'update', created.id, '--plan', 'pro', '--read-only', '--api-disabled', '--rate-limits', 'write=5', '--modules', 'all'],
      env,
    );
    assert.equal(updated.plan_code, 'pro');
    assert.equal(updated.read_only, true);
    assert.equal(updated.api_enabled, false);
    assert.equal(updated.modules.length, 13);
    assert.deepEqual(updated.rate_limits, {
      burst_per_second: 3,
      requests_per_minute_read: 300,
      requests_per_minute_write: 5,
      requests_per_day_total: 77,
    });
    const enabled = await balcaoJson(['accounts', 'update', created.id, '--api-enabled', '--no-read-only'], env);
    assert.equal(enabled.api_enabled, true);
    assert.equal(enabled.read_only, false);
    const list = await balcaoJson(['accounts', 'list'], env);
    assert.deepEqual(Object.keys(list), ['data']);
    assert.ok(list.data.some((a: any) => a.id === created.id && a.plan_code === 'pro'));
  });

  it('defaults to the free plan with no modules', async () => {
    const a = await balcaoJson(['accounts', 'create', '--name', 'Padrão'], env);
    assert.equal(a.plan_code, 'free');
    assert.deepEqual(a.modules, []);
    assert.equal(a.rate_limits.burst_per_second, 5);
  });

  it('refuses bad input with a one-line message on stderr and a non-zero exit', async () => {
    for (const args of [
      ['accounts', 'create', '--name', 'X', '--plan', 'gold'],
      ['accounts', 'create', '--name', 'X', '--modules', 'clientes,nope'],
      ['accounts', 'create', '--name', 'X', '--rate-limits', 'burst=0'],
      ['accounts', 'update', '00000000-0000-0000-0000-000000000000', '--plan', 'pro'],
      ['keys', 'create', '--account', 'not-a-uuid', '--name', 'k'],
    ]) {
      const r = await balcao([...args, '--json'], env);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      assert.ok(r.stderr.trim().length > 0, args.join(' '));
    }
  });

  it('keys create prints the secret once; list never shows it; the plan limit is enforced; revoke frees a slot', async () => {
    const account = await balcaoJson(['accounts', 'create', '--name', 'Clínica', '--plan', 'free', '--modules', 'all'], env);
    const key = await balcaoJson(
      [
        'keys',
        'create',
        '--account',
        account.id,
        '--name',
        'ERP',
        '--scopes',
        'customers:write,sales:read',
        '--allowed-ips',
        '10.0.0.0/8,::1',
        '--expires-at',
        '2030-01-01T00:00:00Z',
      ],
      env,
    );
    assert.deepEqual(Object.keys(key).sort(), ['allowed_ips', 'expires_at', 'id', 'key', 'last4', 'name', 'prefix', 'scopes']);
    assert.match(key.key, /^balcao_live_[0-9A-Za-z]{38}$/);
    assert.equal(key.prefix, 'live');
    assert.equal(key.last4, key.key.slice(-4));
    assert.deepEqual(key.scopes, ['customers:write', 'sales:read']);
    assert.deepEqual(key.allowed_ips, ['10.0.0.0/8', '::1']);
    assert.equal(key.expires_at, '2030-01-01T00:00:00.000Z');

    const refused = await balcao(['keys', 'create', '--account', account.id, '--name', 'second', '--json'], env);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /1 simultaneous key/);

    const expired = await balcaoJson(
      ['keys', 'create', '--account', account.id, '--name', 'old', '--test', '--expires-at', '2020-01-01T00:00:00Z'],
      env,
    );
    assert.equal(expired.prefix, 'test');
    assert.match(expired.key, /^balcao_test_/);

    const listed = await balcao(['keys', 'list', '--account', account.id, '--json'], env);
    assert.equal(listed.code, 0);
    assert.ok(!listed.stdout.includes(key.key) && !listed.stdout.includes(expired.key), 'no secrets in the listing');
    assert.deepEqual(
      JSON.parse(listed.stdout).data.map((k: any) => k.name),
      ['ERP', 'old'],
    );

    const revoked = await balcaoJson(['keys', 'revoke', key.id], env);
    assert.equal(revoked.id, key.id);
    assert.ok(revoked.revoked_at);
    const again = await balcaoJson(['keys', 'create', '--account', account.id, '--name', 'replacement'], env);
    assert.match(again.key, /^balcao_live_/);
  });

  it('refuses invalid scopes and IP ranges', async () => {
    const account = await balcaoJson(['accounts', 'create', '--name', 'Scopes', '--plan', 'pro'], env);
    assert.notEqual(
      (await balcao(['keys', 'create', '--account', account.id, '--name', 'k', '--scopes', 'customers:delete', '--json'], env)).code,
      0,
    );
    assert.notEqual(
      (await balcao(['keys', 'create', '--account', account.id, '--name', 'k', '--allowed-ips', '10.0.0.0/99', '--json'], env)).code,
      0,
    );
  });

  it('serves keys it made; with the embedded database a second process refuses at once, naming the holder', async () => {
    const account = await balcaoJson(['accounts', 'create', '--name', 'Servida', '--plan', 'pro', '--modules', 'clientes'], env);
    const key = await balcaoJson(['keys', 'create', '--account', account.id, '--name', 'k', '--scopes', 'customers:read'], env);
    const server = await startServe('serve', env);
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const me = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${key.key}` } });
      assert.equal(me.status, 200);
      assert.equal(((await me.json()) as any).data.team_id, account.id);
      if (!env.DATABASE_URL) {
        const second = await balcao(['accounts', 'list', '--json'], env);
        assert.notEqual(second.code, 0);
        assert.match(second.stderr, new RegExp(`in use by process ${server.child.pid}`));
      } else {
        // With PostgreSQL the CLI works alongside, and a revoked key stops working within 5 s.
        await balcaoJson(['keys', 'revoke', key.id], env);
        const status = await until(
          'the revoked key is refused',
          async () => (await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${key.key}` } })).status,
          { done: (s) => s !== 200, withinMs: 6_000, everyMs: 100 },
        );
        assert.equal(status, 401);
      }
    } finally {
      await server.stop();
    }
    assert.equal(server.child.exitCode, 0, 'serve exits cleanly on SIGTERM');
  });
});
