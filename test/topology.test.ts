// The production topology, started by scripts/topology.sh from Debian's packages and deploy/'s files:
// PostgreSQL, PgBouncer (transaction pooling), Redis, three `balcao serve` instances, HAProxy in front.
// Steady traffic goes through HAProxy (reads, sales with Idempotency-Keys, a webhook endpoint on a local
// receiver) while the test does a rolling restart of every instance (drain in HAProxy, wait for its
// sessions to end, SIGTERM, start, ready), applies a migration while the instances serve, and kills one
// instance with -9. It holds: no request fails except those in flight on the killed instance, which are
// retried with their Idempotency-Key and give exactly one sale each; a rate limit stays exact across the
// instances (Redis); every event reaches the receiver, a webhook-id twice only as the retry of an attempt
// the kill cut off.
//
// The topology brings its own PostgreSQL, so the run does not depend on the suite's engine. It runs on
// the suite's PostgreSQL pass (TEST_DATABASE_URL set, as .ci/run does it) or with TEST_TOPOLOGY=1; on the
// embedded pass the same file checks that every deploy/ template renders and that HAProxy and
// the shell accept the results, and says where the full run happens. The instances run from a copy of
// this checkout's built package (bin/, dist/, migrations/), or, with TEST_TOPOLOGY_TARBALL=<the .tgz>,
// from that release installed with `npm install --omit=dev`; the test adds its migration to that copy only.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { freePort } from './helpers/free-port.ts';
import { type Received, startReceiver } from './helpers/webhook-receiver.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(ROOT, 'scripts/topology.sh');
const FULL = !!process.env.TEST_DATABASE_URL || process.env.TEST_TOPOLOGY === '1';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function sh(file: string, args: string[], env: Record<string, string>, timeout = 120_000): Promise<Run> {
  return new Promise((resolve) => {
    const { TEST_DATABASE_URL: _t, DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
    execFile(file, args, { env: { ...rest, ...env }, timeout, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const ended = error?.killed ? `\n(ended after its ${timeout / 1000} s bound)` : '';
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr: `${stderr}${ended}` });
    });
  });
}

async function must(file: string, args: string[], env: Record<string, string>, timeout?: number): Promise<string> {
  const res = await sh(file, args, env, timeout);
  assert.equal(res.code, 0, `${path.basename(file)} ${args.join(' ')} failed: ${res.stderr}${res.stdout}`);
  return res.stdout;
}

if (!FULL) {
  describe('topology (the full run is on the PostgreSQL pass: TEST_DATABASE_URL set, or TEST_TOPOLOGY=1)', () => {
    it('renders every deploy/ file; HAProxy checks its configuration, bash the script', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-deploy-'));
      try {
        const vars: Record<string, string> = {
          HAPROXY_ADMIN_PORT: '1',
          HAPROXY_HTTP_PORT: '2',
          HAPROXY_HTTPS_PORT: '3',
          BALCAO_PORT_1: '4',
          BALCAO_PORT_2: '5',
          BALCAO_PORT_3: '6',
          TOPOLOGY_DIR: dir,
          TLS_PEM: path.join(dir, 'tls.pem'),
          PGBOUNCER_DBNAME: 'balcao',
          PG_HOST: '127.0.0.1',
          PG_PORT: '5432',
          PG_DBNAME: 'balcao',
          PGBOUNCER_PORT: '6432',
          PGBOUNCER_DIR: dir,
          PGBOUNCER_AUTH_TYPE: 'trust',
          PGBOUNCER_POOL_SIZE: '8',
          REDIS_PORT: '6379',
          BALCAO_PORT: '3001',
          BALCAO_DATABASE_URL: 'postgres://balcao@127.0.0.1:6432/balcao',
          BALCAO_LISTEN_DATABASE_URL: 'postgres://balcao@127.0.0.1:5432/balcao',
          BALCAO_DB_POOL_SIZE: '5',
          BALCAO_REDIS_URL: 'redis://127.0.0.1:6379',
          BALCAO_PUBLIC_URL: 'https://api.example.com',
        };
        for (const file of ['haproxy.cfg', 'pgbouncer.ini', 'redis.conf', 'balcao.env']) {
          const rendered = await new Promise<string>((resolve, reject) => {
            const child = execFile('envsubst', { env: { ...process.env, ...vars } }, (err, out) => (err ? reject(err) : resolve(out)));
            child.stdin?.end(fs.readFileSync(path.join(ROOT, 'deploy', file), 'utf8'));
          });
          assert.doesNotMatch(rendered, /\$\{[A-Z_0-9]+\}/, `${file}: a name left unrendered`);
          fs.writeFileSync(path.join(dir, file), rendered);
        }
        await must(
          'openssl',
          ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=x', '-keyout', `${dir}/k`, '-out', `${dir}/c`],
          {},
        );
        fs.writeFileSync(vars.TLS_PEM as string, fs.readFileSync(`${dir}/c`, 'utf8') + fs.readFileSync(`${dir}/k`, 'utf8'));
        await must('haproxy', ['-c', '-f', path.join(dir, 'haproxy.cfg')], {});
        const env = fs.readFileSync(path.join(dir, 'balcao.env'), 'utf8');
        assert.match(env, /^BALCAO_DB_PREPARE=false$/m);
        await must('bash', ['-n', SCRIPT], {});
        assert.match(fs.readFileSync(path.join(ROOT, 'deploy/balcao@.service'), 'utf8'), /^EnvironmentFile=/m);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
} else {
  describe('topology: HAProxy, PgBouncer, Redis and three instances under a rolling restart, a live migration and a kill -9', () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-topology-'));
    const release = path.join(work, 'release');
    const dir = path.join(work, 'run');
    let env: Record<string, string>;
    let bin: string;
    let directUrl: string;
    let up = false;

    before(async () => {
      // The release the instances run: the built package's files (the tarball's content), with its
      // migrations folder of its own, to which the test adds one while the instances serve.
      fs.chmodSync(work, 0o755); // PostgreSQL and PgBouncer run as the postgres user under it
      fs.mkdirSync(release);
      const tarball = process.env.TEST_TOPOLOGY_TARBALL;
      if (tarball) {
        // The release as an operator installs it (docs/deployment.md): runtime dependencies only.
        // From the registry: with two suites at once on two cores it once passed 120 s.
        await must('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefix', release, path.resolve(tarball)], {}, 300_000);
        bin = path.join(release, 'node_modules/balcao/bin/balcao.js');
      } else {
        for (const part of ['bin', 'dist', 'migrations', 'package.json'])
          fs.cpSync(path.join(ROOT, part), path.join(release, part), { recursive: true });
        fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(release, 'node_modules'));
        bin = path.join(release, 'bin/balcao.js');
      }
      const [http1, https1, admin, pg, bouncer, redis, p1, p2, p3] = await Promise.all(Array.from({ length: 9 }, () => freePort()));
      env = {
        TOPOLOGY_DIR: dir,
        BALCAO_BIN: bin,
        TOPOLOGY_HTTP_PORT: String(http1),
        TOPOLOGY_HTTPS_PORT: String(https1),
        TOPOLOGY_ADMIN_PORT: String(admin),
        TOPOLOGY_PG_PORT: String(pg),
        TOPOLOGY_PGBOUNCER_PORT: String(bouncer),
        TOPOLOGY_REDIS_PORT: String(redis),
        TOPOLOGY_INSTANCE_PORTS: `${p1} ${p2} ${p3}`,
        // Webhooks to the loopback receiver. The timeout bounds a killed instance's lease (2 × timeout + a
        // margin) yet is far above a loaded loopback answer: an answer slower than the timeout is a failed
        // attempt, made again, and the test would see an id twice outside any stop.
        TOPOLOGY_ENV: 'BALCAO_WEBHOOK_ALLOW_PRIVATE=1\nBALCAO_WEBHOOK_TIMEOUT_SECONDS=5\nBALCAO_WEBHOOK_RETRY_SCHEDULE=1,1,1,1,1',
      };
      up = true;
      await must(SCRIPT, ['up'], env);
      directUrl = `postgres://postgres@127.0.0.1:${pg}/balcao`;
    });

    after(async () => {
      if (up) await sh(SCRIPT, ['down'], env);
      fs.rmSync(work, { recursive: true, force: true });
    });

    it('drops nothing through a rolling restart, a live migration and a kill -9', async () => {
      const url = `http://127.0.0.1:${env.TOPOLOGY_HTTP_PORT}`;
      const cliEnv = {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${env.TOPOLOGY_PGBOUNCER_PORT}/balcao`,
        BALCAO_DB_PREPARE: 'false',
        LOG_LEVEL: 'warn',
      };
      const cli = async (...args: string[]) => JSON.parse(await must(process.execPath, [bin, ...args, '--json'], cliEnv));
      const account = await cli('accounts', 'create', '--name', 'Topologia', '--plan', 'enterprise', '--modules', 'all');
      await cli('accounts', 'update', account.id, '--rate-limits', 'burst=100000,read=1000000,write=1000000,day=10000000');
      const { key } = await cli('keys', 'create', '--account', account.id, '--name', 'traffic', '--scopes', '*:write');
      const LIMIT = 40;
      const limited = await cli(
        'accounts',
        'create',
        '--name',
        'Limitada',
        '--plan',
        'enterprise',
        '--rate-limits',
        `burst=100000,read=100000,write=100000,day=${LIMIT}`,
      );
      const { key: limitedKey } = await cli('keys', 'create', '--account', limited.id, '--name', 'limited');

      const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
      const once = (method: string, route: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
        new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
          const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
          const req = http.request(
            new URL(route, url),
            {
              method,
              agent,
              headers: {
                authorization: `Bearer ${options.key ?? key}`,
                ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
                ...options.headers,
              },
            },
            (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (c) => {
                text += c;
              });
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }),
              );
              res.on('error', reject);
            },
          );
          req.on('error', reject);
          req.end(payload);
        });

      // TLS is terminated by HAProxy (deploy/haproxy.cfg), with the certificate the script made.
      const tls = await new Promise<number>((resolve, reject) => {
        const req = https.get(
          `https://127.0.0.1:${env.TOPOLOGY_HTTPS_PORT}/v1/me`,
          { ca: fs.readFileSync(path.join(dir, 'tls.crt')), headers: { authorization: `Bearer ${key}` } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
      });
      assert.equal(tls, 200);

      const endpoint = await once('POST', '/v1/webhook-endpoints', {
        body: { url: (await receiverReady).url, enabled_events: ['sale.created'] },
      });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));

      // The traffic: every request is retried until it succeeds, with the same Idempotency-Key.
      const stats = { sent: 0, failed: 0, retried: 0, completed: 0 };
      const failures: { sentAt: number; what: string }[] = [];
      const salesByKey = new Map<string, Set<string>>();
      let killedAt = Number.POSITIVE_INFINITY;
      // When instances stopped: the rolling restart (each a graceful stop) and the kill. A webhook attempt
      // in flight then is cut off (a graceful stop releases it after its grace, the kill loses it) and made
      // again: webhooks are delivered at least once (docs/events.md, "Delivery").
      const stops: { from: number; to: number; what: string }[] = [];
      let stopping = false;
      const progress = new Set<() => void>();
      const completedAtLeast = (n: number) =>
        new Promise<void>((resolve) => {
          const check = () => {
            if (stats.completed < n) return;
            progress.delete(check);
            resolve();
          };
          progress.add(check);
          check();
        });

      const request = async (method: string, route: string, body?: unknown) => {
        const idempotencyKey = method === 'POST' ? randomUUID() : undefined;
        const sentAt = performance.now();
        for (let attempt = 0; attempt < 40; attempt++) {
          if (attempt > 0) stats.retried++;
          stats.sent++;
          let what: string;
          let retryAfterMs = 100;
          try {
            const res = await once(method, route, { body, headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {} });
            if (res.status < 300) {
              if (idempotencyKey) {
                const ids = salesByKey.get(idempotencyKey) ?? new Set();
                ids.add(res.body.data.id);
                salesByKey.set(idempotencyKey, ids);
              }
              stats.completed++;
              for (const p of progress) p();
              return;
            }
            what = `${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
            if (res.status < 500 && !(res.status === 409 && res.body?.type?.endsWith('/idempotency_conflict')))
              throw new Error(`${method} ${route}: ${what}`);
            retryAfterMs = Number(res.headers['retry-after'] ?? 0.1) * 1000;
          } catch (err) {
            if (err instanceof Error && err.message.startsWith(method)) throw err;
            what = String(err);
          }
          if (attempt === 0) stats.failed++;
          failures.push({ sentAt, what: `${method} ${route} attempt ${attempt}: ${what}` });
          await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
        }
        throw new Error(`${method} ${route}: no success after 40 attempts`);
      };

      const sale = () => ({ items: [{ catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 1, unit_price: 12.5 }] });
      const loop = async (w: number) => {
        for (let i = 0; !stopping; i++) {
          const kind = (w + i) % 4;
          if (kind === 0) await request('POST', '/v1/sales', sale());
          else if (kind === 1) await request('GET', '/v1/sales?limit=5');
          else if (kind === 2) await request('GET', '/v1/customers?limit=5');
          else await request('GET', '/v1/me');
        }
      };
      const traffic = Promise.all(Array.from({ length: 6 }, (_, w) => loop(w)));
      traffic.catch(() => {
        stopping = true;
      });

      try {
        await completedAtLeast(30);

        // Rolling restart of every instance, with a rate-limited key's burst spread over them meanwhile.
        const rollFrom = performance.now();
        const rolling = must(SCRIPT, ['roll'], env);
        const answers = await Promise.all(Array.from({ length: LIMIT * 3 }, () => once('GET', '/v1/me', { key: limitedKey })));
        await rolling;
        stops.push({ from: rollFrom, to: performance.now(), what: 'the rolling restart' });
        const ok = answers.filter((a) => a.status === 200).length;
        const refused = answers.filter((a) => a.status === 429).length;
        assert.equal(ok, LIMIT, `rate limit across instances: ${ok} answered, ${refused} refused`);
        assert.equal(refused, LIMIT * 2);

        // A migration applied while the instances serve (the new release's): they go on answering.
        fs.writeFileSync(
          path.join(path.dirname(path.dirname(bin)), 'migrations', '900_topology_probe.sql'),
          '-- Added by test/topology.test.ts to its own copy of the release.\nCREATE TABLE topology_probe (id integer PRIMARY KEY);\n',
        );
        const migrated = JSON.parse(await must(SCRIPT, ['migrate'], env));
        assert.deepEqual(migrated.applied, ['900_topology_probe.sql']);
        await completedAtLeast(stats.completed + 20);

        // kill -9 of one instance; HAProxy takes it out; it comes back.
        const killFrom = performance.now();
        await must(SCRIPT, ['kill', '2'], env);
        killedAt = performance.now(); // a request sent before this instant may have been on the killed instance
        // The receiver (this process) may take in an attempt sent just before the kill a moment after it.
        stops.push({ from: killFrom, to: killedAt + 1_000, what: 'the kill' });
        await completedAtLeast(stats.completed + 30);
        await must(SCRIPT, ['start', '2'], env);
        await completedAtLeast(stats.completed + 30);
      } finally {
        stopping = true;
        await traffic;
        agent.destroy();
      }

      const haproxy = await must(SCRIPT, ['admin', 'show stat'], env);
      const retriesByHaproxy = haproxy
        .split('\n')
        .filter((l) => l.startsWith('balcao,BACKEND'))
        .map((l) => `${Number(l.split(',')[15])} retries, ${Number(l.split(',')[16])} redispatches`);
      console.log(
        `topology: requests sent ${stats.sent}, failed ${stats.failed}, retried ${stats.retried}; by HAProxy: ${retriesByHaproxy.join('')}; ${salesByKey.size} sales`,
      );
      for (const f of failures) console.log(`topology: failed ${f.what}`);

      // Only what was in flight on the killed instance failed (and was retried until it succeeded): every
      // failed attempt is of a request first sent before the kill.
      for (const f of failures) assert.ok(f.sentAt <= killedAt, `a request failed outside the kill: ${f.what}`);
      assert.ok(stats.failed <= 6, `more failures than requests in flight: ${stats.failed}`);

      // Exactly one sale per Idempotency-Key.
      for (const [k, ids] of salesByKey) assert.equal(ids.size, 1, `key ${k} gave sales ${[...ids].join(', ')}`);
      const db = postgres(directUrl, { max: 1, onnotice: () => {} });
      try {
        const [row] = await db`SELECT count(*)::int AS n FROM transactions WHERE team_id = ${account.id}`;
        assert.equal(row?.n, salesByKey.size, 'sales stored against keys that succeeded');
        const [probe] = await db`SELECT to_regclass('topology_probe') IS NOT NULL AS present`;
        assert.equal(probe?.present, true);
      } finally {
        await db.end();
      }

      // Every sale's event reaches the receiver; an id twice only when a stop cut its first attempt off.
      const saleIds = new Set([...salesByKey.values()].flatMap((ids) => [...ids]));
      const receiver = await receiverReady;
      const delivered = (r: Received[]) => new Set(r.map((x) => JSON.parse(x.body).data.object.id as string));
      await receiver.until((r) => [...saleIds].every((id) => delivered(r).has(id)), 45_000);
      const seen = new Map<string, number>();
      const duringStop = (at: number) => stops.find((stop) => at >= stop.from && at <= stop.to);
      const when = (at: number) =>
        `${Math.round(at)} ms (${stops.map((stop) => `${stop.what} ${Math.round(stop.from)}–${Math.round(stop.to)} ms`).join(', ')})`;
      let retriedAfterStop = 0;
      for (const r of receiver.received) {
        const first = seen.get(r.id);
        if (first === undefined) {
          seen.set(r.id, r.at);
          continue;
        }
        assert.ok(
          duringStop(first) && r.at > first,
          `webhook-id ${r.id} received twice, not as a retry of an attempt a stop cut off: first at ${when(first)}, again at ${Math.round(r.at)} ms`,
        );
        retriedAfterStop++;
      }
      console.log(`topology: ${retriedAfterStop} webhook attempts made again after a stop cut them off`);
      console.log(`topology: ${receiver.received.length} webhook requests for ${seen.size} events`);
    });

    const receiverReady = startReceiverWithTimes();
    after(async () => (await receiverReady).close());
  });
}

/** The webhook receiver, with the time (performance.now) each request arrived. */
async function startReceiverWithTimes() {
  const times = new WeakMap<Received, number>();
  const receiver = await startReceiver((r) => {
    times.set(r, performance.now());
    return 200;
  });
  return {
    ...receiver,
    get received() {
      return receiver.received.map((r) => Object.assign(r, { at: times.get(r) ?? 0 }));
    },
    until: (check: (r: (Received & { at: number })[]) => boolean, ms?: number) =>
      receiver.until((r) => check(r.map((x) => Object.assign(x, { at: times.get(x) ?? 0 }))), ms),
  };
}
