// `BENCH_PART=mix npm run bench`: the many-account mix (docs/performance.md, "The many-account mix"). 1 000
// accounts of Zipf-like sizes, each with its own key and limits (set far above what the bench sends: it measures
// throughput, not refusals), rate-limit counters in Redis, a webhook endpoint on every tenth account pointing at a
// receiver here. The same seeded sequence of requests is sent by wrk to Balcão and to the bare mix server in
// alternating rounds, each server alone on the database during its round, and the statements of the mix are
// replayed by pgbench (PostgreSQL's ceiling) in each pair. Everything it starts listens on loopback and is
// stopped by PID.
// Env: BENCH_QUICK=1 (scale 0.05, short rounds: about two minutes), BENCH_MIX_SCALE (1: the largest account has
// 100 000 customers and 200 000 sales), BENCH_MIX_SEED (51), BENCH_SECONDS per round (quick 5, full 10),
// BENCH_PAIRS (quick 2, full 3), BENCH_WARMUP (quick 3, full 8), BENCH_CONNECTIONS (50), BENCH_WRK_THREADS (1),
// BENCH_DIR (the cluster, kept: a second run of the same scale reuses its loaded template). To find where a ratio
// comes from: BENCH_MIX_ONLY (operations of MIX by name, separated by ';': only those are sent) and BENCH_MIX_SIDES
// (balcao,bare,bare+capture,pgbench: the sides measured; bare+capture is the bare server beside a `balcao serve` that
// serves nothing and captures its writes; pgbench replays the whole mix whatever BENCH_MIX_ONLY says);
// BENCH_MIX_WEBHOOKS=0: no endpoint is enabled, to price the deliveries apart from the capture;
// BENCH_MIX_PROFILE=<folder>: `balcao serve` runs with `--cpu-prof` into that folder, one profile per round (the
// bare server into <folder>/bare). BENCH_MIX_NODE_FLAGS: more flags for `balcao serve`'s node (`--trace-deopt`),
// BENCH_MIX_ENV: more environment for it, `NAME=value` pairs separated by spaces (`LOG_LEVEL=warn`), to price a
// part by turning it off; BENCH_MIX_STDOUT=<file>: where its output goes (appended).
// BENCH_MIX_PERF=<folder>: each measured round is recorded by `perf record -a -g` (every process and the kernel,
// on-CPU time only), into <folder>/<side>-<round>.data; the servers run with `--perf-basic-prof` so that their
// JavaScript frames have names (`perf report -i <file> --sort comm,dso,sym`).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { childrenOf, rssMb, startBeside, startPostgres, startRedis, stopChild, waitForLine } from '../throwaway-servers.ts';
import { wrkInstalled } from '../wrk.ts';
import { pgbenchMix } from './ceiling.ts';
import { ACCOUNTS, customersOf, ensureMixTemplate, hasWebhook, runDatabase, salesOf } from './mix-data.ts';
import { balcaoRequest, bareRequest, type HttpRequest, MIX, mixSequence, type OpName } from './mix-traffic.ts';
import { wrkSequence } from './wrk-sequence.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LAUNCHER_FLAGS =
  fs
    .readFileSync(path.join(root, 'bin/balcao.js'), 'utf8')
    .split('\n')[0]!
    .match(/--[\w-]+(?:=\S+)?/g) ?? [];
const QUICK = process.env.BENCH_QUICK === '1';
const SCALE = Number(process.env.BENCH_MIX_SCALE ?? (QUICK ? 0.05 : 1));
const SEED = Number(process.env.BENCH_MIX_SEED ?? 51);
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 5 : 10));
const PAIRS = Number(process.env.BENCH_PAIRS ?? (QUICK ? 2 : 3));
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? (QUICK ? 3 : 8));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const PERF_DIR = process.env.BENCH_MIX_PERF ? path.resolve(process.env.BENCH_MIX_PERF) : undefined;
const WRK_THREADS = Number(process.env.BENCH_WRK_THREADS ?? 1);
const SEQUENCE_LENGTH = 20_000;
const dir = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'balcao-bench-mix');
const ONLY = process.env.BENCH_MIX_ONLY ? new Set(process.env.BENCH_MIX_ONLY.split(';').map((n) => n.trim())) : undefined;
const SIDES = new Set((process.env.BENCH_MIX_SIDES ?? 'balcao,bare,bare+capture,pgbench').split(','));
for (const name of ONLY ?? []) if (!(name in MIX)) throw new Error(`BENCH_MIX_ONLY: no operation named ${JSON.stringify(name)}`);

interface Server {
  base: string;
  pid: number;
  /** Other processes whose CPU counts as the server's (a capturing instance beside the bare server). */
  helpers?: number[];
  /** Where the capture's readiness is read, when not at `base`. */
  captureBase?: string;
  stop(): Promise<void>;
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
  errors: number;
  requests: number;
  rss: number;
  nodeCpuMs: number;
  pgCpuMs: number;
  /** Redis's CPU per request (the rate-limit counters; none for the bare server). */
  redisCpuMs: number;
  /** Every process's CPU per request, the kernel's included (all cores busy time, /proc/stat): what the 2 cores gave. */
  machineCpuMs: number;
  /** Database transactions per request answered (the server's own background work included). */
  transactionsPerRequest: number;
}

/** `balcao serve` as served: default log level, JSON logs drained as a shipper would; a session of its own. */
async function startBalcao(databaseUrl: string, redisUrl: string): Promise<Server> {
  const env = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PORT: '0', HOST: '127.0.0.1' } as Record<string, string>;
  delete env.LOG_LEVEL;
  env.BALCAO_WEBHOOK_ALLOW_PRIVATE = '1'; // the receiver is on loopback
  for (const pair of (process.env.BENCH_MIX_ENV ?? '').split(' ').filter(Boolean)) {
    const at = pair.indexOf('=');
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  const profile = process.env.BENCH_MIX_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_MIX_PROFILE)}`] : [];
  if (PERF_DIR) profile.push('--perf-basic-prof');
  if (process.env.BENCH_MIX_NODE_FLAGS) profile.push(...process.env.BENCH_MIX_NODE_FLAGS.split(' '));
  const child = spawn(process.execPath, [...LAUNCHER_FLAGS, ...profile, path.join(root, 'bin/balcao.js'), 'serve', '--json'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (process.env.BENCH_MIX_STDOUT) child.stdout?.pipe(fs.createWriteStream(process.env.BENCH_MIX_STDOUT, { flags: 'a' }));
  const line = await waitForLine(child, 'balcao serve');
  child.stderr?.resume();
  return { base: JSON.parse(line).url, pid: child.pid!, stop: () => stopChild(child) };
}

async function startBare(databaseUrl: string): Promise<Server> {
  const flags = PERF_DIR ? ['--perf-basic-prof'] : [];
  if (process.env.BENCH_MIX_PROFILE) flags.push('--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_MIX_PROFILE, 'bare')}`);
  const child = spawn(process.execPath, [...flags, path.join(root, 'bench/mix/bare-mix-server.js')], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const port = await waitForLine(child, 'bare mix server');
  return { base: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => stopChild(child) };
}

/**
 * The bare server with a `balcao serve` beside it that serves nothing: it captures the bare server's writes as any
 * outside writer's, makes their events and delivers their webhooks. Its rate over the bare server's is the most a
 * server whose every write is captured this way (the change feed's contract) can reach on this mix.
 */
async function startBareCaptured(databaseUrl: string, redisUrl: string): Promise<Server> {
  const pair = await startBeside(
    () => startBalcao(databaseUrl, redisUrl),
    () => startBare(databaseUrl),
  );
  return { base: pair.server.base, pid: pair.server.pid, helpers: [pair.beside.pid], captureBase: pair.beside.base, stop: pair.stop };
}

/** CPU seconds of a process (user + system). */
function processCpu(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** Busy CPU seconds of the whole machine, every core (user, nice, system, irq, softirq, steal). */
function machineCpu(): number {
  const [cpu] = fs.readFileSync('/proc/stat', 'utf8').split('\n');
  const f = (cpu ?? '').trim().split(/\s+/).slice(1).map(Number);
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return busy / 100;
}

/**
 * CPU seconds of the whole PostgreSQL server: the postmaster's own and that of its children that have exited
 * (cutime, cstime: the postmaster waits for its backends), plus the live children's. Backends that come and go
 * during a round (pgbench's) are counted too.
 */
function postgresCpu(postmaster: number): number {
  let total = 0;
  try {
    const stat = fs.readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return 0;
  }
  for (const pid of childrenOf(postmaster)) total += processCpu(pid);
  return total;
}

/** Receives the webhook deliveries; one lag sample per delivery: arrival − the event's created_at. */
function startReceiver(): Promise<{ url: string; lags: number[]; record: boolean; close(): void }> {
  const state = { url: '', lags: [] as number[], record: false, close: () => server.close() };
  const server = http.createServer((req, res) => {
    const arrived = Date.now();
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      if (state.record) {
        try {
          const created = Date.parse((JSON.parse(body) as { created_at: string }).created_at);
          if (Number.isFinite(created)) state.lags.push(arrived - created);
        } catch {
          // not an event: ignored
        }
      }
      res.writeHead(204);
      res.end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      resolve(state);
    }),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Until Balcão's capture has caught up (what the bare rounds wrote becomes events too) and no delivery waits, at most two minutes. */
async function settled(server: Server, sql: postgres.Sql): Promise<boolean> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const ready = (await fetch(`${server.captureBase ?? server.base}/health/ready`)
      .then((r) => r.json())
      .catch(() => undefined)) as { capture?: { state: string; lag_bytes: number | null } } | undefined;
    const captured = ready?.capture?.state === 'capturing' && (ready.capture.lag_bytes ?? 0) < 256 * 1024;
    const [{ pending } = { pending: 0 }] = await sql`SELECT count(*)::int AS pending FROM webhook_deliveries WHERE status = 'pending'`;
    if (captured && pending === 0) return true;
    await sleep(200);
  }
  return false;
}

/**
 * Until no other client backend or walsender is left (a stopped server's, pgbench's), at most 10 s: the postmaster
 * counts a child's CPU when it reaps it, so a backend of one round reaped during the next would be billed to it.
 */
async function quiet(sql: postgres.Sql): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [{ n } = { n: 0 }] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE backend_type IN ('client backend', 'walsender') AND pid <> pg_backend_pid()`;
    if (n === 0) break;
    await sleep(100);
  }
  await sleep(300);
}

/** One measured round of the sequence against a server. */
/** Transactions the database has ended, committed or not (its statistics lag by up to a second: PGSTAT_MIN_INTERVAL). */
async function transactions(sql: postgres.Sql): Promise<number> {
  const [row] = await sql`SELECT sum(xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database`;
  return Number(row?.n ?? 0);
}

async function measure(
  server: Server,
  requests: readonly HttpRequest[],
  seconds: number,
  postmaster: number,
  redisPid: number,
  sql: postgres.Sql,
  perfFile?: string,
): Promise<Round> {
  const transactionsBefore = await transactions(sql);
  const nodeProcesses = [server.pid, ...(server.helpers ?? [])];
  const nodeCpu = () => nodeProcesses.reduce((sum, pid) => sum + processCpu(pid), 0);
  const nodeBefore = nodeCpu();
  const pgBefore = postgresCpu(postmaster);
  const redisBefore = processCpu(redisPid);
  const machineBefore = machineCpu();
  let rss = 0;
  const sampler = setInterval(() => {
    rss = Math.max(rss, rssMb(server.pid));
  }, 250);
  const perf = perfFile ? recordPerf(perfFile, seconds) : undefined;
  try {
    const r = await wrkSequence({ base: server.base, requests, connections: CONNECTIONS, seconds, threads: WRK_THREADS });
    const total = r.requests || 1;
    const nodeCpuMs = ((nodeCpu() - nodeBefore) * 1000) / total;
    const pgCpuMs = ((postgresCpu(postmaster) - pgBefore) * 1000) / total;
    const redisCpuMs = ((processCpu(redisPid) - redisBefore) * 1000) / total;
    const machineCpuMs = ((machineCpu() - machineBefore) * 1000) / total;
    await sleep(1_100);
    return {
      rps: r.rps,
      p50: r.p50Ms,
      p99: r.p99Ms,
      mean: r.meanMs,
      max: r.maxMs,
      errors: r.errors,
      requests: r.requests,
      rss,
      nodeCpuMs,
      pgCpuMs,
      redisCpuMs,
      machineCpuMs,
      transactionsPerRequest: ((await transactions(sql)) - transactionsBefore) / total,
    };
  } finally {
    clearInterval(sampler);
    await perf;
  }
}

/** `perf record` of the whole machine for the round's seconds (BENCH_MIX_PERF). */
function recordPerf(file: string, seconds: number): Promise<void> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const child = spawn('perf', ['record', '-a', '-g', '-F', '499', '-o', file, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
  return new Promise((resolve) => {
    child.once('error', () => resolve());
    child.once('exit', () => resolve());
  });
}

/** The first requests of each operation sent once, their statuses tallied: an operation that fails is said, not averaged in. */
async function probe(label: string, base: string, ops: OpName[], requests: readonly HttpRequest[]): Promise<void> {
  const seen = new Map<OpName, Map<number, number>>();
  const done = new Set<OpName>();
  for (let k = 0; k < requests.length && done.size < Object.keys(MIX).length; k++) {
    const op = ops[k]!;
    const count = seen.get(op) ?? new Map<number, number>();
    if ([...count.values()].reduce((a, b) => a + b, 0) >= 3) {
      done.add(op);
      continue;
    }
    const r = requests[k]!;
    const unique = `probe-${process.pid}-${k}`;
    const headers: Record<string, string> = { ...r.headers };
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    if (r.idempotent) headers['idempotency-key'] = unique;
    const response = await fetch(base + r.path, { method: r.method, headers, body: r.body?.replaceAll('{n}', unique) });
    await response.arrayBuffer();
    count.set(response.status, (count.get(response.status) ?? 0) + 1);
    seen.set(op, count);
  }
  const bad = [...seen].filter(([, statuses]) => [...statuses.keys()].some((s) => s >= 400));
  const summary = [...seen].map(([op, s]) => `${op} ${[...s].map(([code, n]) => `${code}×${n}`).join(' ')}`);
  console.log(`  ${label} probe: ${bad.length === 0 ? 'every operation answered' : 'SOME OPERATIONS FAILED'}: ${summary.join('; ')}`);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function summary(label: string, rounds: Round[]): Round {
  if (rounds.length === 0) {
    console.log(`  ${label.padEnd(18)} not measured (BENCH_MIX_SIDES)`);
    return {
      rps: Number.NaN,
      p50: Number.NaN,
      p99: Number.NaN,
      mean: Number.NaN,
      max: Number.NaN,
      errors: 0,
      requests: 0,
      rss: 0,
      nodeCpuMs: Number.NaN,
      pgCpuMs: Number.NaN,
      redisCpuMs: Number.NaN,
      machineCpuMs: Number.NaN,
      transactionsPerRequest: Number.NaN,
    };
  }
  const m = (pick: (r: Round) => number) => median(rounds.map(pick));
  const r: Round = {
    rps: m((x) => x.rps),
    p50: m((x) => x.p50),
    p99: m((x) => x.p99),
    mean: m((x) => x.mean),
    max: Math.max(...rounds.map((x) => x.max)),
    errors: rounds.reduce((sum, x) => sum + x.errors, 0),
    requests: rounds.reduce((sum, x) => sum + x.requests, 0),
    rss: Math.max(...rounds.map((x) => x.rss)),
    nodeCpuMs: m((x) => x.nodeCpuMs),
    pgCpuMs: m((x) => x.pgCpuMs),
    redisCpuMs: m((x) => x.redisCpuMs),
    machineCpuMs: m((x) => x.machineCpuMs),
    transactionsPerRequest: m((x) => x.transactionsPerRequest),
  };
  console.log(
    `  ${label.padEnd(18)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(6)} ms  p99 ${r.p99.toFixed(1).padStart(7)} ms  mean ${r.mean.toFixed(1)} ms  max ${r.max.toFixed(0)} ms  errors ${r.errors}/${r.requests}  ${r.rss ? `RSS ${r.rss.toFixed(0)} MB  ` : ''}CPU/req node ${r.nodeCpuMs.toFixed(2)} ms, PostgreSQL ${r.pgCpuMs.toFixed(2)} ms, Redis ${r.redisCpuMs.toFixed(2)} ms, machine ${r.machineCpuMs.toFixed(2)} ms${Number.isNaN(r.transactionsPerRequest) ? '' : `  transactions/req ${r.transactionsPerRequest.toFixed(2)}`}`,
  );
  return r;
}

if (!wrkInstalled()) throw new Error('the mix bench needs wrk (apt-get install wrk)');
const started = performance.now();
const totals = Array.from({ length: ACCOUNTS }, (_, k) => [customersOf(k + 1, SCALE), salesOf(k + 1, SCALE)] as const);
const customers = totals.reduce((s, [c]) => s + c, 0);
const sales = totals.reduce((s, [, v]) => s + v, 0);
console.log(
  `mix bench: ${ACCOUNTS} accounts (scale ${SCALE}: largest ${totals[0]![0].toLocaleString('en')} customers and ${totals[0]![1].toLocaleString('en')} sales, median ${totals[ACCOUNTS / 2]![0]} and ${totals[ACCOUNTS / 2]![1]}; ${customers.toLocaleString('en')} customers, ${sales.toLocaleString('en')} sales with 2 items each in all), seed ${SEED}, ${PAIRS} pairs of ${SECONDS} s rounds after ${WARMUP_SECONDS} s of warm-up, ${CONNECTIONS} connections from wrk, ${os.cpus().length} CPUs`,
);
const pg = await startPostgres(dir);
const redis = await startRedis();
const running = new Set<Server>();
process.once('SIGINT', () => {
  void Promise.all([...running].map((s) => s.stop())).finally(() => {
    redis.stop();
    pg.stop();
    process.exit(130);
  });
});
const postmaster = pg.pids()[0]!;
let database: Awaited<ReturnType<typeof runDatabase>> | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
let sql: postgres.Sql | undefined;
try {
  const data = await ensureMixTemplate(pg.url, dir, SCALE);
  console.log(`dataset ready (bulk SQL load in ${data.loadSeconds.toFixed(0)} s, template ${data.template} kept in ${dir})`);
  database = await runDatabase(pg.url, data.template);
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
  receiver = await startReceiver();
  await sql`UPDATE webhook_endpoints SET url = ${receiver.url}`;
  if (process.env.BENCH_MIX_WEBHOOKS === '0') {
    // A diagnosis switch: the same mix with no endpoint, to tell the deliveries' cost from the capture's.
    await sql`UPDATE webhook_endpoints SET enabled = false`;
    await sql`UPDATE tenant_counters SET has_endpoints = false`;
  }
  const endpoints =
    process.env.BENCH_MIX_WEBHOOKS === '0' ? 0 : Array.from({ length: ACCOUNTS }, (_, k) => k + 1).filter(hasWebhook).length;
  console.log(`  ${endpoints} accounts with a webhook endpoint; Redis at ${redis.url}`);

  const ops = mixSequence(SEQUENCE_LENGTH, SCALE, SEED).filter((op) => !ONLY || ONLY.has(op.name));
  if (ONLY) console.log(`  only ${[...ONLY].join('; ')}: ${ops.length} of the ${SEQUENCE_LENGTH} requests`);
  const toBalcao = ops.map((op) => balcaoRequest(op, data.keys));
  const toBare = ops.map((op) => bareRequest(op));
  const opNames = ops.map((op) => op.name);

  const rounds = { balcao: [] as Round[], bare: [] as Round[], 'bare+capture': [] as Round[], pgbench: [] as Round[] };
  const dbName = new URL(database.url).pathname.slice(1);
  for (let pair = 0; pair < PAIRS; pair++) {
    const order =
      pair % 2 === 0 ? (['balcao', 'bare', 'bare+capture', 'pgbench'] as const) : (['pgbench', 'bare+capture', 'bare', 'balcao'] as const);
    for (const side of order) {
      if (!SIDES.has(side)) continue;
      if (side === 'pgbench') {
        let before = postgresCpu(postmaster);
        let machineBefore = machineCpu();
        const r = await pgbenchMix({
          port: pg.port,
          database: dbName,
          clients: CONNECTIONS,
          seconds: SECONDS,
          warmupSeconds: WARMUP_SECONDS,
          scale: SCALE,
          onWarm: () => {
            before = postgresCpu(postmaster);
            machineBefore = machineCpu();
          },
        });
        await quiet(sql);
        const total = r.requests || 1;
        rounds.pgbench.push({
          ...r,
          p50: r.p50Ms,
          p99: r.p99Ms,
          mean: r.meanMs,
          max: r.maxMs,
          rss: 0,
          nodeCpuMs: 0,
          pgCpuMs: ((postgresCpu(postmaster) - before) * 1000) / total,
          redisCpuMs: 0,
          machineCpuMs: ((machineCpu() - machineBefore) * 1000) / total,
          transactionsPerRequest: Number.NaN,
        });
        continue;
      }
      const server =
        side === 'balcao'
          ? await startBalcao(database.url, redis.url)
          : side === 'bare+capture'
            ? await startBareCaptured(database.url, redis.url)
            : await startBare(database.url);
      running.add(server);
      const captured = side !== 'bare';
      try {
        const requests = side === 'balcao' ? toBalcao : toBare;
        if (captured && !(await settled(server, sql))) console.log('  (capture or deliveries not settled after 2 minutes)');
        if (pair === 0) await probe(side, server.base, opNames, requests);
        await wrkSequence({ base: server.base, requests, connections: CONNECTIONS, seconds: WARMUP_SECONDS, threads: WRK_THREADS });
        if (captured) await settled(server, sql);
        if (side === 'balcao') receiver.record = true;
        rounds[side].push(
          await measure(server, requests, SECONDS, postmaster, redis.pid, sql, PERF_DIR && path.join(PERF_DIR, `${side}-${pair}.data`)),
        );
        if (captured) {
          // The deliveries of the round's events, bounded: a backlog left at the stop is said, not hidden.
          if (!(await settled(server, sql))) console.log('  (webhook deliveries still pending 2 minutes after the round)');
          receiver.record = false;
        }
      } finally {
        await server.stop();
        running.delete(server);
        await quiet(sql);
      }
    }
  }

  console.log(`\nthe mix (medians of ${PAIRS} rounds each; RSS the largest seen)`);
  const b = summary('balcao', rounds.balcao);
  const bare = summary('bare', rounds.bare);
  const bareCaptured = summary('bare+capture', rounds['bare+capture']);
  const ceiling = summary('pgbench -M prepared', rounds.pgbench);
  const ratios = rounds.balcao.map((r, i) => r.rps / (rounds.bare[i]?.rps ?? Number.NaN));
  const ceilingRatios = rounds.balcao.map((r, i) => r.rps / (rounds.pgbench[i]?.rps ?? Number.NaN));
  const lags = [...receiver.lags].sort((x, y) => x - y);
  const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor(lags.length * p))] ?? Number.NaN;
  const check = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log('\nratios');
  console.log(
    `  balcao ÷ bare req/s        ${median(ratios).toFixed(2)}× (pairs ${ratios.map((x) => x.toFixed(2)).join(', ')}; target ≥ 0.9: ${check(median(ratios) >= 0.9)})`,
  );
  console.log(`  balcao ÷ bare p99          ${(b.p99 / bare.p99).toFixed(2)}× (target ≤ 2: ${check(b.p99 <= 2 * bare.p99)})`);
  const capturedRatios = rounds['bare+capture'].map((r, i) => r.rps / (rounds.bare[i]?.rps ?? Number.NaN));
  console.log(
    `  bare+capture ÷ bare req/s  ${median(capturedRatios).toFixed(2)}× (pairs ${capturedRatios.map((x) => x.toFixed(2)).join(', ')}): the most a server whose writes are captured can reach; balcao ÷ bare+capture ${(b.rps / bareCaptured.rps).toFixed(2)}×`,
  );
  console.log(`  balcao ÷ pgbench req/s     ${median(ceilingRatios).toFixed(2)}× (bare ÷ pgbench ${(bare.rps / ceiling.rps).toFixed(2)}×)`);
  console.log(
    `  node CPU per request       balcao ${b.nodeCpuMs.toFixed(2)} ms ÷ bare ${bare.nodeCpuMs.toFixed(2)} ms = ${(b.nodeCpuMs / bare.nodeCpuMs).toFixed(2)}×`,
  );
  console.log(
    `  PostgreSQL CPU per request balcao ${b.pgCpuMs.toFixed(2)} ms ÷ bare ${bare.pgCpuMs.toFixed(2)} ms = ${(b.pgCpuMs / bare.pgCpuMs).toFixed(2)}×; ÷ pgbench ${ceiling.pgCpuMs.toFixed(2)} ms = ${(b.pgCpuMs / ceiling.pgCpuMs).toFixed(2)}×`,
  );
  console.log(
    `  RSS of balcao under the mix ${b.rss.toFixed(0)} MB (target ≤ 150: ${check(b.rss <= 150)}; bare ${bare.rss.toFixed(0)} MB)`,
  );
  console.log(
    `  webhook delivery lag       p50 ${pct(0.5).toFixed(0)} ms, p99 ${pct(0.99).toFixed(0)} ms over ${lags.length} deliveries (arrival − event created_at, balcao rounds)`,
  );
  console.log(`\nmix bench finished in ${((performance.now() - started) / 1000).toFixed(0)} s`);
} finally {
  for (const server of running) await server.stop();
  receiver?.close();
  await sql?.end();
  await database?.drop();
  redis.stop();
  pg.stop();
}
