// `npm run bench:replica` (and the last part of `npm run bench`): one streaming replica beside the primary.
// On 2 cores a replica cannot add throughput (it shares the cores); what this shows is where the work lands:
// the primary's CPU per read with and without the replica, the replica's, and what the routing costs the
// Node process: the key's commit-position check (a map lookup, plus a Redis GET with REDIS_URL) and, on
// writes, the position read right behind each COMMIT. Each variant is a fresh `balcao serve` over the same
// primary and replica (helpers/replica.ts), loaded by wrk (or autocannon) after a warm-up.
// Env: BENCH_SECONDS per round (3), BENCH_WARMUP (2), BENCH_CONNECTIONS (10), BENCH_REPLICA_CUSTOMERS (500).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startPrimaryWithReplica } from '../test/helpers/replica.ts';
import { cpuSeconds, startRedis } from './throwaway-servers.ts';
import { wrk, wrkInstalled } from './wrk.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const CUSTOMERS = Number(process.env.BENCH_REPLICA_CUSTOMERS ?? 500);
const LOADGEN = process.env.BENCH_LOADGEN ?? (wrkInstalled() ? 'wrk' : 'autocannon');

interface Variant {
  name: string;
  replica: boolean;
  redis: boolean;
  method: 'GET' | 'POST';
}

const VARIANTS: Variant[] = [
  { name: 'read, primary only', replica: false, redis: false, method: 'GET' },
  { name: 'read, one replica', replica: true, redis: false, method: 'GET' },
  { name: 'read, primary only, REDIS_URL', replica: false, redis: true, method: 'GET' },
  { name: 'read, one replica, REDIS_URL (LSN check in Redis)', replica: true, redis: true, method: 'GET' },
  { name: 'write, primary only', replica: false, redis: false, method: 'POST' },
  { name: 'write, one replica (position behind COMMIT)', replica: true, redis: false, method: 'POST' },
];

function cli(env: Record<string, string>, args: string[]): any {
  const out = execFileSync(process.execPath, [path.join(root, 'bin/balcao.js'), ...args, '--json'], { env: { ...process.env, ...env } });
  return JSON.parse(out.toString());
}

async function serve(env: Record<string, string>): Promise<{ base: string; pid: number; stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [path.join(root, 'bin/balcao.js'), 'serve', '--json'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stderr?.resume();
  const line = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const end = buffered.indexOf('\n');
      if (end >= 0) resolve(buffered.slice(0, end));
    });
    child.once('exit', (code) => reject(new Error(`balcao serve exited (${code})`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    base: JSON.parse(line).url,
    pid: child.pid as number,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function load(url: string, method: 'GET' | 'POST', key: string, seconds: number) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  const body = method === 'POST' ? JSON.stringify({ full_name: 'Bench Replica', email: 'bench@example.com' }) : undefined;
  if (body) headers['content-type'] = 'application/json';
  if (LOADGEN === 'wrk') {
    const r = await wrk({ url, connections: CONNECTIONS, seconds, threads: 1, method, headers, body });
    return { requests: r.requests, rps: r.rps, p50: r.p50Ms, errors: r.errors };
  }
  const r = await autocannon({ url, connections: CONNECTIONS, duration: seconds, method, headers, body });
  return { requests: r.requests.total, rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx };
}

async function main() {
  const pair = await startPrimaryWithReplica();
  const redis = await startRedis();
  try {
    const primaryEnv = { DATABASE_URL: pair.primary.url };
    execFileSync(process.execPath, [path.join(root, 'bin/balcao.js'), 'migrate'], { env: { ...process.env, ...primaryEnv } });
    const account = cli(primaryEnv, [
      'accounts',
      'create',
      '--name',
      'Bench replica',
      '--plan',
      'enterprise',
      '--modules',
      'all',
      '--rate-limits',
      'burst=1000000,read=100000000,write=100000000,day=1000000000',
    ]);
    const key = cli(primaryEnv, ['keys', 'create', '--account', account.id, '--name', 'bench', '--scopes', '*:write']).key as string;
    // A second key reads: the writing key's reads would follow its writes to the primary.
    const reader = cli(primaryEnv, ['keys', 'create', '--account', account.id, '--name', 'reader', '--scopes', '*:read']).key as string;
    const seeding = await serve(primaryEnv);
    for (let i = 0; i < CUSTOMERS; i++) {
      const res = await fetch(`${seeding.base}/v1/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ full_name: `Cliente ${i}`, email: `c${i}@example.com` }),
      });
      if (res.status !== 201) throw new Error(`seeding: ${res.status} ${await res.text()}`);
    }
    await seeding.stop();
    await pair.caughtUp();

    console.log(
      `read replica bench: ${CUSTOMERS} customers, GET /v1/customers?limit=20 by a reading key, POST /v1/customers by a writing key`,
    );
    console.log(`${LOADGEN}, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${SECONDS} s per variant; CPU is ms per request`);
    console.log(
      'variant'.padEnd(52),
      'req/s'.padStart(8),
      'p50 ms'.padStart(8),
      'node'.padStart(7),
      'primary'.padStart(8),
      'replica'.padStart(8),
      'errors'.padStart(7),
    );
    for (const v of VARIANTS) {
      const env: Record<string, string> = { ...primaryEnv };
      if (v.replica) env.BALCAO_READ_DATABASE_URL = pair.replica.url;
      if (v.redis) env.REDIS_URL = redis.url;
      const server = await serve(env);
      try {
        const url = v.method === 'GET' ? `${server.base}/v1/customers?limit=20` : `${server.base}/v1/customers`;
        const as = v.method === 'GET' ? reader : key;
        await load(url, v.method, as, WARMUP);
        const before = {
          node: cpuSeconds([server.pid]),
          primary: cpuSeconds(pair.primary.pids()),
          replica: cpuSeconds(pair.replica.pids()),
        };
        const r = await load(url, v.method, as, SECONDS);
        const n = r.requests || 1;
        const per = (now: number, was: number) => (((now - was) * 1000) / n).toFixed(3);
        console.log(
          v.name.padEnd(52),
          r.rps.toFixed(0).padStart(8),
          r.p50.toFixed(2).padStart(8),
          per(cpuSeconds([server.pid]), before.node).padStart(7),
          per(cpuSeconds(pair.primary.pids()), before.primary).padStart(8),
          per(cpuSeconds(pair.replica.pids()), before.replica).padStart(8),
          String(r.errors).padStart(7),
        );
      } finally {
        await server.stop();
      }
    }
    await lsnCheckCost(pair.primary.url, pair.replica.url, redis.url);
  } finally {
    redis.stop();
    await pair.destroy();
  }
}

/** The position check alone, in process: what routing one read costs before its query is sent. */
async function lsnCheckCost(primaryUrl: string, replicaUrl: string, redisUrl: string) {
  const { openDatabase } = await import('../src/infra/db/engine/database.ts');
  for (const withRedis of [false, true]) {
    const database = await openDatabase({
      databaseUrl: primaryUrl,
      dataDir: '',
      readDatabaseUrls: [replicaUrl],
      redisUrl: withRedis ? redisUrl : undefined,
    });
    try {
      const reads = database.reads;
      if (!reads) throw new Error('no read router');
      await reads.firstPoll;
      // Wait until Redis answers (a failure keeps reads on the primary for the lag bound).
      for (let i = 0; withRedis && i < 100 && !(await reads.pick('warm')); i++) await new Promise((r) => setTimeout(r, 100));
      await reads.noteWrite('writer', 1); // an old position: the replica has replayed it
      const calls = withRedis ? 5_000 : 200_000;
      let onReplica = 0;
      const started = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) {
        const picked = reads.pick(i % 2 === 0 ? 'writer' : 'reader');
        if (picked instanceof Promise ? await picked : picked) onReplica++;
      }
      const us = Number(process.hrtime.bigint() - started) / 1000 / calls;
      console.log(
        `position check per read, ${withRedis ? 'with REDIS_URL (one GET)' : 'in process (no Redis)'}: ${us.toFixed(3)} µs (${onReplica}/${calls} routed to the replica)`,
      );
    } finally {
      await database.close();
    }
  }
}

if (!fs.existsSync(path.join(root, 'dist'))) throw new Error('run `npm run build` first (npm run bench:replica does)');
await main();
