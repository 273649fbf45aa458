// The release: `npm pack` of the built checkout, installed with `npm install --omit=dev` into an empty folder.
// It holds dist/ and migrations/ (no src/, test/ or bench/), installs no TypeScript or test tool, and every
// operator command runs from it with only Node on the PATH. On PostgreSQL too when TEST_DATABASE_URL is set.
// The tarball is packed with --ignore-scripts: `prepare` would rebuild dist/ under the other tests' feet
// (`npm test` builds it first). npm installs the dependencies from its cache when it holds them.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ScratchEnv, scratchEnv } from './helpers/cli.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;

describe('the release tarball, installed without development dependencies', () => {
  let work: string;
  let installed: string;
  let scratch: ScratchEnv;
  let env: Record<string, string>;
  let packed: string[];

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-release-'));
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT });
    const [info] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
    assert.equal(info.filename, `balcao-${version}.tgz`);
    packed = info.files.map((f) => f.path);
    installed = path.join(work, 'app');
    fs.mkdirSync(installed);
    fs.writeFileSync(path.join(installed, 'package.json'), '{"private":true}\n');
    await run('npm', ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, info.filename)], {
      cwd: installed,
      timeout: 300_000,
    });
    scratch = await scratchEnv();
    // Only Node itself on the PATH: no tsx, no npx, nothing of the checkout.
    env = { ...scratch.env, PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, LOG_LEVEL: 'warn', HOME: work };
  });
  after(async () => {
    await scratch?.cleanup();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  /** `balcao ...` from the installed package's bin link, in the install folder. */
  const balcao = async (args: string[]) => {
    const { stdout } = await run(path.join(installed, 'node_modules/.bin/balcao'), args, { cwd: installed, env, timeout: 60_000 });
    return stdout;
  };
  const json = async (args: string[]) => JSON.parse(await balcao([...args, '--json']));

  it('holds dist/ and migrations/, not the sources, tests or benchmarks', () => {
    assert.ok(packed.includes('bin/balcao.js'));
    assert.ok(packed.includes('dist/cli/main.js'));
    assert.ok(packed.includes('migrations/001_initial.sql'));
    assert.deepEqual(
      packed.filter((f) => /^(src|test|bench|docs|scripts\/build)/.test(f)),
      [],
    );
  });

  it('installs runtime dependencies only', () => {
    const modules = path.join(installed, 'node_modules');
    for (const dev of ['tsx', 'typescript', 'esbuild', '@biomejs', 'autocannon', 'fast-check', '@redocly', 'openapi-typescript'])
      assert.equal(fs.existsSync(path.join(modules, dev)), false, `${dev} is not installed`);
  });

  it('runs every operator command from the install', async () => {
    const help = await balcao(['--help']);
    for (const command of ['serve', 'migrate', 'accounts', 'keys', 'import', 'export', 'webhooks'])
      assert.match(help, new RegExp(`^  ${command} `, 'm'));
    const migrated = await json(['migrate']);
    assert.equal(migrated.applied.length > 0, true);
    const account = await json(['accounts', 'create', '--name', 'Release', '--plan', 'pro', '--modules', 'all']);
    assert.equal((await json(['accounts', 'list'])).data.length, 1);
    const key = await json(['keys', 'create', '--account', account.id, '--name', 'k', '--scopes', '*:read']);
    assert.match(key.key, /^balcao_live_/);
    const data = path.join(work, 'data.json');
    fs.writeFileSync(data, JSON.stringify({ customers: [{ full_name: 'Ana Souza' }, { full_name: 'Bruno Lima' }] }));
    const imported = await json(['import', '--account', account.id, data]);
    assert.equal(imported.counts?.customers ?? imported.customers, 2);
    const out = path.join(work, 'export');
    await json(['export', '--account', account.id, '--format', 'ndjson', '--out', out]);
    assert.ok(fs.readdirSync(out).length > 0);
    assert.deepEqual((await json(['webhooks', 'list', '--account', account.id])).data, []);

    // serve: listens, answers with the key, stops on SIGTERM with exit 0.
    const child = spawn(path.join(installed, 'node_modules/.bin/balcao'), ['serve', '--json'], {
      cwd: installed,
      env: { ...env, PORT: '0', HOST: '127.0.0.1', BALCAO_SHUTDOWN_GRACE_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const listening = await new Promise<{ url: string }>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (d) => {
        stdout += d;
        if (stdout.includes('\n')) resolve(JSON.parse(stdout));
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code}`)));
    });
    const me = await fetch(`${listening.url}/v1/customers`, { headers: { authorization: `Bearer ${key.key}` } });
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { data: unknown[] }).data.length, 2);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
