// `npm run bench:profile`: a CPU profile of `balcao serve` under load (node --cpu-prof) on the
// benchmark's throwaway PostgreSQL, summarized as where the busy time goes by part of the path
// (bench/profile-parts.ts) and the functions and packages with the most self time.
// Env: BENCH_DATABASE_URL (a running server instead: bench/bench-postgres.ts), BENCH_CUSTOMERS (default 50000),
// BENCH_SECONDS (10), BENCH_PATH (first page), BENCH_CONNECTIONS (50; a few give a profile less coloured by the
// time the server waits for a CPU, which the sampler counts as the running function's);
// BENCH_PATH=/v1/sales profiles `POST /v1/sales` (10 items, a fresh Idempotency-Key each) instead, and
// BENCH_PATH=/v1/customers/{id} a `PATCH` of new notes, spread over 1 000 customers.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { ensureDataset } from './dataset.ts';
import { benchPostgres } from './bench-postgres.ts';
import { type CpuProfile, timeByPart } from './profile-parts.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 50_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-profile-'));

const { pg, dir } = await benchPostgres(CUSTOMERS);
try {
  const data = await ensureDataset(pg.url, dir, CUSTOMERS);
  const target = process.env.BENCH_PATH ?? '/v1/customers?limit=20';
  const env = { ...process.env, DATABASE_URL: pg.url, PORT: '0', HOST: '127.0.0.1' } as Record<string, string>;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', profileDir, path.join(root, 'bin/balcao.js'), 'serve', '--json'], {
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).url)));
  const posting = target === '/v1/sales';
  const patching = target.includes('{id}');
  const headers = { authorization: `Bearer ${posting || patching ? data.writeKey : data.readKey}`, 'content-type': 'application/json' };
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const ids = patching
    ? (await admin.unsafe(`SELECT id FROM customers WHERE team_id = $1 AND mode = 'live' LIMIT 1000`, [data.accountId])).map((r) =>
        String(r.id),
      )
    : [];
  await admin.end();
  const item = { catalog_type: 'product', catalog_item_id: '00000000-0000-4000-8000-000000000001', quantity: 2, unit_price: 10 };
  let n = 0;
  const load = posting
    ? {
        method: 'POST' as const,
        body: JSON.stringify({ items: Array.from({ length: 10 }, () => item) }),
        requests: [
          {
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              headers: { ...req.headers, 'idempotency-key': `profile-${process.pid}-${n++}` },
            }),
          },
        ],
      }
    : patching
      ? {
          method: 'PATCH' as const,
          requests: [
            {
              setupRequest: (req: autocannon.Request) => {
                n++;
                return { ...req, path: target.replace('{id}', ids[n % ids.length]!), body: JSON.stringify({ notes: `profile ${n}` }) };
              },
            },
          ],
        }
      : {};
  const warmUp = await autocannon({
    url: url + target.replace('{id}', ids[0] ?? ''),
    connections: CONNECTIONS,
    duration: 2,
    headers,
    ...load,
  });
  const result = await autocannon({
    url: url + target.replace('{id}', ids[0] ?? ''),
    connections: CONNECTIONS,
    duration: SECONDS,
    headers,
    ...load,
  });
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
  console.log(
    `profile of ${posting ? 'POST' : patching ? 'PATCH' : 'GET'} ${target}: ${result.requests.total} requests in ${SECONDS} s (${result.requests.average.toFixed(0)} req/s)`,
  );

  const file = fs.readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'))!;
  const profile = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const fnTime = new Map<string, number>();
  const pkgTime = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { functionName, url: source, lineNumber } = byId.get(id)!.callFrame;
    const where = source.replace(/^file:\/\//, '').replace(`${root}/`, '');
    const pkg =
      /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where)?.[1] ?? (where.startsWith('dist/') ? 'balcao (dist)' : where || functionName);
    fnTime.set(
      `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`,
      (fnTime.get(`${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`) ?? 0) + us,
    );
    pkgTime.set(pkg, (pkgTime.get(pkg) ?? 0) + us);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  const parts = timeByPart(profile);
  const busy = 1 - (parts.find((p) => p.part === 'idle')?.share ?? 0);
  // The profile holds the warm-up's requests too.
  const perRequestMs = (cpuMs: number) => (cpuMs / (warmUp.requests.total + result.requests.total)).toFixed(3);
  const busyMs = (total / 1000) * busy;
  console.log(`where the busy time goes (${perRequestMs(busyMs)} ms per request, start-up and warm-up included):`);
  for (const { part, share } of parts.filter((p) => p.part !== 'idle'))
    console.log(`  ${((100 * share) / busy).toFixed(1).padStart(5)}%  ${perRequestMs((total / 1000) * share).padStart(6)} ms  ${part}`);
  console.log(`self time by package or source:\n${top(pkgTime, 15)}`);
  console.log(`self time by function:\n${top(fnTime, 25)}`);
  console.log(`(profile kept in ${path.join(profileDir, file)}; open it in Chrome DevTools)`);
} finally {
  pg.stop();
}
