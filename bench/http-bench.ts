// `npm run bench`: Balcão under load against a bare baseline, on a throwaway PostgreSQL loaded
// through the product's own import. For each scenario it prints req/s, p50, p99, errors and the
// server's RSS, with Node and PostgreSQL CPU per request, and Balcão ÷ baseline as the median of
// alternating pairs. Everything it starts listens on loopback and is stopped by PID.
// Env: BENCH_CUSTOMERS (default 1000000), BENCH_SECONDS per round (3), BENCH_PAIRS (4),
// BENCH_WARMUP (seconds of load on each freshly started server before its round: 8),
// BENCH_CONNECTIONS (50), BENCH_DIR (where the loaded cluster is kept; reused when the size matches),
// BENCH_ONLY (comma list: only the scenarios whose title contains one of these words run; `sync` runs the timed
// reads of keeping a copy in sync: counts, digests, includes on a list),
// BENCH_LOADGEN (wrk or autocannon; wrk when it is installed), BENCH_WRK_THREADS (1),
// BENCH_TRACES_BASELINE (a git ref, e.g. the commit before traces: the "traces off" scenario is paired with a
// build of it, made in a temporary folder; unset: with OTEL_TRACES_EXPORTER=none, the other way to say off),
// BENCH_PG_OPTIONS (more server options for the throwaway cluster, e.g. pg_stat_statements preloaded).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { encodeCursor } from '../src/query/cursor.ts';
import { buildCheckout } from './checkout.ts';
import { ensureDataset } from './dataset.ts';
import { childrenOf, cpuSeconds, rssMb, startBeside, startPostgres, startRedis, stopChild, waitForLine } from './throwaway-servers.ts';
import { wrk, wrkInstalled } from './wrk.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The V8 flags of bin/balcao.js's `#!` line: `balcao serve` runs with them, so the benchmark does too. */
const LAUNCHER_FLAGS =
  fs
    .readFileSync(path.join(root, 'bin/balcao.js'), 'utf8')
    .split('\n')[0]!
    .match(/--[\w-]+(?:=\S+)?/g) ?? [];
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 8);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const dir = process.env.BENCH_DIR ?? path.join(os.tmpdir(), `balcao-bench-pg-${CUSTOMERS}`);
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
const LOADGEN = process.env.BENCH_LOADGEN ?? (wrkInstalled() ? 'wrk' : 'autocannon');
const WRK_THREADS = Number(process.env.BENCH_WRK_THREADS ?? 1);
if (LOADGEN !== 'wrk' && LOADGEN !== 'autocannon') throw new Error(`BENCH_LOADGEN must be wrk or autocannon, not ${LOADGEN}`);

interface Server {
  base: string;
  /** The processes serving (one, or each worker). */
  pids(): number[];
  stop(): Promise<void>;
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  rss: number;
  nodeCpuMs: number;
  pgCpuMs: number;
}

interface Target {
  path: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  body?: string;
  /** A fresh Idempotency-Key per request. */
  idempotent?: boolean;
  /** `{id}` in the path takes the next of these per request, `{n}` in the body a value of its own. */
  ids?: readonly string[];
}

interface BalcaoOptions {
  redisUrl?: string;
  workers?: number;
  logLevel?: string;
  /** More environment (the OTEL_* variables of the traces scenarios). */
  env?: Record<string, string>;
  /** Another build's checkout (the traces baseline): its bin/balcao.js serves. */
  checkout?: string;
}

async function startBalcao(databaseUrl: string, extra: BalcaoOptions = {}): Promise<Server> {
  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1' } as Record<string, string>;
  delete env.REDIS_URL;
  delete env.LOG_LEVEL; // the default level, as served
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name]; // traces off, as by default
  if (extra.redisUrl) env.REDIS_URL = extra.redisUrl;
  if (extra.logLevel) env.LOG_LEVEL = extra.logLevel;
  Object.assign(env, extra.env);
  const args = [
    ...LAUNCHER_FLAGS,
    path.join(extra.checkout ?? root, 'bin/balcao.js'),
    'serve',
    '--json',
    ...(extra.workers ? ['--workers', String(extra.workers)] : []),
  ];
  // Logs go to stderr with --json: drained here as a log shipper would read them.
  // Each server runs in a session of its own (detached), as a service would. With the kernel's
  // autogroup scheduling (on by default) a session shares one CPU share among its processes, so the
  // servers would otherwise compete inside the benchmark's own share with the load generator, and two
  // workers with each other.
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const line = await waitForLine(child, 'balcao serve');
  child.stderr?.resume();
  const pid = child.pid!;
  return { base: JSON.parse(line).url, pids: () => (extra.workers ? childrenOf(pid) : [pid]), stop: () => stopChild(child) };
}

async function startBare(databaseUrl: string, accountId: string): Promise<Server> {
  const child = spawn(process.execPath, [path.join(root, 'bench/bare-server.js')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ACCOUNT_ID: accountId },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const port = await waitForLine(child, 'bare server');
  return { base: `http://127.0.0.1:${port}`, pids: () => [child.pid!], stop: () => stopChild(child) };
}

/**
 * The bare server with a `balcao serve` beside it that serves nothing and captures the bare server's writes, as it
 * captures any outside writer's: the bare write plus the capture every write now carries (the change decoded by a
 * walsender, read by Balcão, its event inserted). Its rate over the bare server's is the most a server whose writes
 * are captured this way can reach. CPU per request counts both processes.
 */
async function startBareCaptured(databaseUrl: string, accountId: string): Promise<Server> {
  const pair = await startBeside(
    async () => {
      const capturer = await startBalcao(databaseUrl);
      await caughtUp(capturer);
      return capturer;
    },
    () => startBare(databaseUrl, accountId),
  );
  return { base: pair.server.base, pids: () => [...pair.server.pids(), ...pair.beside.pids()], stop: pair.stop };
}

async function load(server: Server, target: Target, seconds: number, pgPids: () => number[], probe = false): Promise<Round> {
  const lag = probe && lagProbe ? lagProbe.start() : undefined;
  const pids = server.pids();
  const nodeBefore = cpuSeconds(pids);
  const pgBefore = cpuSeconds(pgPids());
  let rss = 0;
  const sampler = setInterval(() => {
    for (const pid of pids) rss = Math.max(rss, rssMb(pid));
  }, 250);
  const { requests, ...figures } =
    LOADGEN === 'wrk' ? await loadFromWrk(server, target, seconds) : await loadFromAutocannon(server, target, seconds);
  clearInterval(sampler);
  if (lag) captureLags.push(...(await lag.stop()));
  const total = requests || 1;
  return {
    ...figures,
    rss,
    nodeCpuMs: ((cpuSeconds(pids) - nodeBefore) * 1000) / total,
    pgCpuMs: ((cpuSeconds(pgPids()) - pgBefore) * 1000) / total,
  };
}

type LoadFigures = Pick<Round, 'rps' | 'p50' | 'p99' | 'errors'> & { requests: number };

async function loadFromWrk(server: Server, target: Target, seconds: number): Promise<LoadFigures> {
  const result = await wrk({
    url: server.base + target.path,
    connections: CONNECTIONS,
    seconds,
    threads: WRK_THREADS,
    method: target.method ?? 'GET',
    headers: { ...target.headers, ...(target.body ? { 'content-type': 'application/json' } : {}) },
    body: target.body,
    idempotent: target.idempotent,
    ids: target.ids,
  });
  return { requests: result.requests, rps: result.rps, p50: result.p50Ms, p99: result.p99Ms, errors: result.errors };
}

async function loadFromAutocannon(server: Server, target: Target, seconds: number): Promise<LoadFigures> {
  let n = 0;
  const result = await autocannon({
    url: server.base + target.path,
    connections: CONNECTIONS,
    duration: seconds,
    method: target.method ?? 'GET',
    headers: { ...target.headers, ...(target.body ? { 'content-type': 'application/json' } : {}) },
    body: target.body,
    requests:
      target.idempotent || target.ids
        ? [
            {
              setupRequest: (req) => {
                const unique = `bench-${process.pid}-${Date.now()}-${n++}`;
                const ids = target.ids ?? [];
                return {
                  ...req,
                  path: ids.length > 0 ? target.path.replace('{id}', ids[n % ids.length]!) : req.path,
                  body: target.body?.replace('{n}', unique),
                  headers: target.idempotent ? { ...req.headers, 'idempotency-key': unique } : req.headers,
                };
              },
            },
          ]
        : undefined,
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function summary(label: string, rounds: Round[]): Round {
  const m = (pick: (r: Round) => number) => median(rounds.map(pick));
  const r: Round = {
    rps: m((x) => x.rps),
    p50: m((x) => x.p50),
    p99: m((x) => x.p99),
    errors: rounds.reduce((sum, x) => sum + x.errors, 0),
    rss: Math.max(...rounds.map((x) => x.rss)),
    nodeCpuMs: m((x) => x.nodeCpuMs),
    pgCpuMs: m((x) => x.pgCpuMs),
  };
  console.log(
    `  ${label.padEnd(26)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(5)} ms  p99 ${r.p99.toFixed(1).padStart(6)} ms  errors ${r.errors}  RSS ${r.rss.toFixed(0)} MB  CPU/req node ${r.nodeCpuMs.toFixed(2)} ms, PostgreSQL ${r.pgCpuMs.toFixed(2)} ms`,
  );
  return r;
}

/** How to start one of the two servers of a scenario, and what to send it. */
type Side = [label: string, start: () => Promise<Server>, target: Target];

const running = new Set<Server>();

/** Until Balcão's capture has nothing left to capture (what earlier rounds wrote), at most two minutes. */
async function caughtUp(server: Server): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const ready = (await fetch(`${server.base}/health/ready`)
      .then((r) => r.json())
      .catch(() => undefined)) as { capture?: { state: string; lag_bytes: number | null } } | undefined;
    if (ready?.capture?.state === 'capturing' && (ready.capture.lag_bytes ?? 0) < 256 * 1024) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The capture's lag as an outside writer sees it: every 100 ms a row of an account of its own is committed, and
 * the time until the capture's NOTIFY for that account arrives is one sample (commit → event in the feed).
 */
async function startLagProbe(url: string) {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const [account] = await sql`INSERT INTO accounts (name, plan_code, modules) VALUES ('bench capture probe', 'free', '{}') RETURNING id`;
  const tenant = `${account!.id}:live`;
  let arrived: (() => void) | undefined;
  await sql.listen('balcao_events', (payload) => {
    if (payload === tenant) arrived?.();
  });
  return {
    start() {
      let on = true;
      const samples: number[] = [];
      const loop = (async () => {
        while (on) {
          const seen = new Promise<void>((resolve) => {
            arrived = resolve;
          });
          const t0 = performance.now();
          await sql`INSERT INTO customers (team_id, mode, full_name) VALUES (${account!.id}, 'live', 'probe')`;
          const timeout = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 10_000));
          if ((await Promise.race([seen, timeout])) !== 'late') samples.push(performance.now() - t0);
          else samples.push(10_000);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      return {
        async stop() {
          on = false;
          await loop;
          return samples;
        },
      };
    },
    end: () => sql.end(),
  };
}
let lagProbe: Awaited<ReturnType<typeof startLagProbe>> | undefined;
const captureLags: number[] = [];

/** Changes per second the capture turns into events: one UPDATE of `rows` customers by an outside writer. */
async function captureThroughput(url: string, accountId: string, rows: number, start: () => Promise<Server>) {
  const server = await launch(start);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await caughtUp(server);
    const t0 = performance.now();
    await sql`UPDATE customers SET notes = 'capture bench ' || now() WHERE id IN (
      SELECT id FROM customers WHERE team_id = ${accountId} AND mode = 'live' ORDER BY id LIMIT ${rows})`;
    const [{ at } = { at: '0' }] = await sql`SELECT (pg_current_wal_insert_lsn() - '0/0')::text AS at`;
    const committed = performance.now();
    for (;;) {
      const [slot] =
        await sql`SELECT (confirmed_flush_lsn - '0/0')::text AS at FROM pg_replication_slots WHERE slot_name LIKE 'balcao_%' AND active`;
      if (Number(slot?.at ?? 0) >= Number(at)) break;
      if (performance.now() - committed > 600_000) throw new Error('capture did not catch up in 10 minutes');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - committed) / 1000;
    console.log(
      `
capture of one outside UPDATE of ${rows.toLocaleString('en')} customers: the UPDATE took ${((committed - t0) / 1000).toFixed(1)} s, its events ${seconds.toFixed(1)} s after its commit: ${(rows / seconds).toFixed(0)} changes/s`,
    );
    return rows / seconds;
  } finally {
    await sql.end();
    await halt(server);
  }
}

async function launch(start: () => Promise<Server>): Promise<Server> {
  const server = await start();
  running.add(server);
  return server;
}

async function halt(server: Server): Promise<void> {
  await server.stop();
  running.delete(server);
}

/**
 * Alternating pairs; the ratio is the median of the pairs' ratios. Each pair runs on freshly started
 * servers (the order of their start and of their rounds alternates too), each warmed up just before
 * its round.
 * Long-lived servers measured their history as much as their code: two processes of the same
 * build, loaded in turns, kept CPU costs per request 13–21% apart for a whole run (four runs of 6
 * pairs), and one baseline process's cost per request rose by a third over ten rounds of 3 s. The
 * warm-up lets V8 optimize the hot paths and the lazy serializers compile: after 1–3 s,
 * Balcão still spent 0.1–0.2 ms more per request than after 8.
 */
async function paired(title: string, a: Side, b: Side, pgPids: () => number[], options: { alone?: boolean; ceiling?: Side } = {}) {
  if (ONLY && !ONLY.some((word) => title.includes(word))) {
    const skipped: Round = { rps: 0, p50: 0, p99: 0, errors: 0, rss: 0, nodeCpuMs: 0, pgCpuMs: 0 };
    return { a: skipped, b: skipped, ratio: Number.NaN, ceiling: Number.NaN };
  }
  console.log(`\n${title}`);
  const ra: Round[] = [];
  const rb: Round[] = [];
  const rc: Round[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const sides: [Side, Round[]][] = [[a, ra], [b, rb], ...(options.ceiling ? [[options.ceiling, rc] as [Side, Round[]]] : [])];
    const order = i % 2 === 0 ? sides : sides.reverse();
    if (options.alone) {
      // Writes: each server runs alone, so the baseline's writes are not captured by a Balcão waiting its turn (it
      // would spend CPU beside the baseline), and Balcão starts its round with nothing left to capture.
      for (const [[label, start, target], rounds] of order) {
        const server = await launch(start);
        try {
          if (label.startsWith('balcao')) await caughtUp(server);
          await load(server, target, WARMUP_SECONDS, pgPids);
          rounds.push(await load(server, target, SECONDS, pgPids, label.startsWith('balcao')));
        } finally {
          await halt(server);
        }
      }
      continue;
    }
    const pair: Server[] = [];
    try {
      for (const [[, start]] of order) pair.push(await launch(start));
      // Each round right after its own warm-up, so neither is measured after sitting idle while the
      // other warms up (V8 shrinks the heap of a process that has gone idle).
      for (const [k, [[, , target], rounds]] of order.entries()) {
        await load(pair[k]!, target, WARMUP_SECONDS, pgPids);
        rounds.push(await load(pair[k]!, target, SECONDS, pgPids));
      }
    } finally {
      for (const server of pair) await halt(server);
    }
  }
  const sa = summary(a[0], ra);
  const sb = summary(b[0], rb);
  const ratios = ra.map((r, i) => r.rps / rb[i]!.rps);
  const ratio = median(ratios);
  console.log(`  ratio ${a[0]} ÷ ${b[0]}: ${ratio.toFixed(2)}× (pairs ${ratios.map((x) => x.toFixed(2)).join(', ')})`);
  const ceilings = rc.map((r, i) => r.rps / rb[i]!.rps);
  if (options.ceiling) {
    summary(options.ceiling[0], rc);
    console.log(
      `  ratio ${options.ceiling[0]} ÷ ${b[0]}: ${median(ceilings).toFixed(2)}× (pairs ${ceilings.map((x) => x.toFixed(2)).join(', ')}): the most a server whose writes are captured can reach`,
    );
  }
  return { a: sa, b: sb, ratio, ceiling: ceilings.length > 0 ? median(ceilings) : Number.NaN };
}

/**
 * An OTLP/HTTP receiver that keeps nothing (a collector's cheapest stand-in): a process of its own on loopback,
 * so that what it spends is not counted as Balcão's nor slows the load generator.
 */
async function startTraceSink(): Promise<{ url: string; received: () => Promise<number>; stop(): Promise<void> }> {
  const code = `
    const http = require('node:http');
    let exports = 0, bytes = 0;
    const server = http.createServer((req, res) => {
      req.on('data', (c) => { bytes += c.length; });
      req.on('end', () => {
        if (req.url === '/stats') return res.end(JSON.stringify({ exports, bytes }));
        exports += 1;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const port = await waitForLine(child, 'trace sink');
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    received: async () => ((await (await fetch(`${url}/stats`)).json()) as { exports: number }).exports,
    stop: () => stopChild(child),
  };
}

/**
 * Traces (docs/operations.md, "Traces"): off must cost what no traces cost (a build of BENCH_TRACES_BASELINE,
 * else OTEL_TRACES_EXPORTER=none); on, every request sampled and exported over http/protobuf to a sink on
 * loopback, shows what traces cost. Both on the first page and on the sale (a write: more statements per request).
 */
async function tracesScenarios(
  pgUrl: string,
  pgPids: () => number[],
  targets: { read: Target; write: Target },
): Promise<Record<string, Awaited<ReturnType<typeof paired>>>> {
  const results: Record<string, Awaited<ReturnType<typeof paired>>> = {};
  const baselineRef = process.env.BENCH_TRACES_BASELINE;
  const titles = {
    off: `traces off (the default) against ${baselineRef ? `before traces (${baselineRef})` : 'OTEL_TRACES_EXPORTER=none'}: first page`,
    onRead: 'traces on, 100% sampled, exported to a sink on loopback, against off: first page',
    onWrite: 'traces on, 100% sampled, against off: POST /v1/sales with 10 items',
  };
  if (ONLY && !Object.values(titles).some((title) => ONLY.some((word) => title.includes(word)))) return results;
  const baseline = baselineRef && (!ONLY || ONLY.some((word) => titles.off.includes(word))) ? await buildCheckout(baselineRef) : undefined;
  const sink = await startTraceSink();
  try {
    const off = () => startBalcao(pgUrl);
    const before = baseline
      ? () => startBalcao(pgUrl, { checkout: baseline.dir })
      : () => startBalcao(pgUrl, { env: { OTEL_TRACES_EXPORTER: 'none' } });
    const beforeLabel = baseline ? `before traces (${baselineRef})` : 'OTEL_TRACES_EXPORTER=none';
    const on = () =>
      startBalcao(pgUrl, {
        env: {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_TRACES_SAMPLER: 'always_on',
        },
      });
    results.tracesOff = await paired(titles.off, ['traces off', off, targets.read], [beforeLabel, before, targets.read], pgPids);
    results.tracesOnRead = await paired(titles.onRead, ['traces on', on, targets.read], ['traces off', off, targets.read], pgPids);
    results.tracesOnWrite = await paired(titles.onWrite, ['traces on', on, targets.write], ['traces off', off, targets.write], pgPids, {
      alone: true,
    });
    console.log(`  the sink received ${await sink.received()} exports`);
  } finally {
    await sink.stop();
    baseline?.remove();
  }
  return results;
}

/**
 * The reads of keeping a copy in sync (issue 49), timed one request at a time on one server (they are about the
 * latency of a single heavy read, not throughput): counts over the large account's customers, digests over all
 * of them, over exactly 100 000 of them (an id range) and one level down, and a page of sales with their includes.
 * Each is sent once to warm up, then RUNS times; it prints the median and the slowest, and what the answer said.
 */
async function syncReads(databaseUrl: string, accountId: string, headers: Record<string, string>): Promise<void> {
  const RUNS = 5;
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  // What autovacuum does to a table after a load, done now: index-only scans need the visibility map.
  await admin.unsafe('VACUUM (ANALYZE) customers, transactions');
  const [hundredThousandth] = await admin.unsafe(
    `SELECT id FROM customers WHERE team_id = $1 AND mode = 'live' ORDER BY id OFFSET 99999 LIMIT 1`,
    [accountId],
  );
  await admin.end();
  const server = await launch(() => startBalcao(databaseUrl));
  try {
    const timed = async (label: string, path: string, says: (body: any) => string) => {
      const once = async () => {
        const t = performance.now();
        const res = await fetch(`${server.base}${path}`, { headers });
        const body = await res.json();
        return { ms: performance.now() - t, body, status: res.status };
      };
      await once();
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await once());
      const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
      // A refusal (a 503 past the statement timeout) is a figure too: printed, not thrown.
      const failed = runs.find((r) => r.status !== 200);
      const said = failed
        ? `${runs.filter((r) => r.status !== 200).length} of ${RUNS} answered ${failed.status}: ${failed.body.detail}`
        : says(runs[0]!.body);
      console.log(
        `  ${label.padEnd(44)} median ${ms[Math.floor(ms.length / 2)]!.toFixed(0).padStart(5)} ms, slowest ${ms[ms.length - 1]!.toFixed(0).padStart(5)} ms  (${said})`,
      );
      return ms[Math.floor(ms.length / 2)]!;
    };
    const total = (b: any) => `total_count ${b.pagination.total_count} ${b.pagination.total_count_kind}`;
    const entries = (b: any) => `${b.data.length} entries over ${b.data.reduce((n: number, e: any) => n + e.count, 0)} records`;
    console.log(`\nsync reads: one request at a time, ${RUNS} runs after one to warm up`);
    await timed('customers?count=exact', '/v1/customers?limit=20&count=exact', total);
    await timed('customers?count=estimated', '/v1/customers?limit=20&count=estimated', total);
    const digest100k = await timed(
      'customers/digest, 100 000 customers',
      `/v1/customers/digest?filter[id][lte]=${hundredThousandth!.id}`,
      entries,
    );
    await timed('customers/digest?prefix=a (one level down)', '/v1/customers/digest?prefix=a', entries);
    await timed('customers/digest, all 1 000 000 customers', '/v1/customers/digest', entries);
    await timed(
      'sales?include=items,status_history&limit=100',
      '/v1/sales?include=items,status_history&limit=100',
      (b) => `${b.data.length} sales`,
    );
    console.log(`  digest of 100 000 customers under 1 s: ${digest100k < 1000 ? 'met' : 'NOT met'}`);
  } finally {
    await halt(server);
  }
}

const started = performance.now();
console.log(
  `bench: ${CUSTOMERS.toLocaleString('en')} customers, ${PAIRS} pairs of ${SECONDS} s rounds, ${CONNECTIONS} connections from ${LOADGEN === 'wrk' ? `wrk (${WRK_THREADS} thread${WRK_THREADS > 1 ? 's' : ''})` : 'autocannon'}, ${os.cpus().length} CPUs`,
);
const pg = await startPostgres(dir);
const redis = await startRedis();
// Detached servers do not get the terminal's Ctrl-C: stop them by PID, then leave.
process.once('SIGINT', () => {
  void Promise.all([...running].map((server) => server.stop())).finally(() => {
    redis.stop();
    pg.stop();
    process.exit(130);
  });
});
try {
  const data = await ensureDataset(pg.url, dir, CUSTOMERS);
  console.log(`dataset ready (loaded through importObject in ${data.loadSeconds.toFixed(0)} s; kept in ${dir})`);
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const depth = Math.floor(CUSTOMERS * 0.9);
  const [deepRow] = await admin.unsafe(
    `SELECT to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS v, id FROM customers
     WHERE team_id = $1 AND mode = 'live' ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
    [data.accountId, depth - 1],
  );
  // Writes to existing records are spread over a thousand of them, as an integration's would be.
  const customerIds = (
    await admin.unsafe(`SELECT id FROM customers WHERE team_id = $1 AND mode = 'live' LIMIT 1000`, [data.accountId])
  ).map((r) => String(r.id));
  const saleIds = (
    await admin.unsafe(`SELECT id FROM transactions WHERE team_id = $1 AND mode = 'live' AND transaction_type = 'sale' LIMIT 1000`, [
      data.accountId,
    ])
  ).map((r) => String(r.id));
  await admin.end();
  const cursor = encodeCursor('-created_at', deepRow!.v, deepRow!.id);
  const pgPids = () => pg.pids();

  const balcao = () => startBalcao(pg.url);
  const bare = () => startBare(pg.url, data.accountId);
  const bareCaptured = () => startBareCaptured(pg.url, data.accountId);
  lagProbe = await startLagProbe(pg.url);
  const read = { authorization: `Bearer ${data.readKey}` };
  const write = { authorization: `Bearer ${data.writeKey}` };
  if (!ONLY || ONLY.includes('sync')) await syncReads(pg.url, data.accountId, read);
  const results: Record<string, Awaited<ReturnType<typeof paired>>> = {};
  const scenarios: [string, string, string][] = [
    ['first page', '/v1/customers?limit=20', '/first'],
    [
      `page ${depth.toLocaleString('en')} rows deep`,
      `/v1/customers?limit=20&cursor=${cursor}`,
      `/deep?value=${deepRow!.v}&id=${deepRow!.id}`,
    ],
    ['filter full_name ilike Ana%', '/v1/customers?limit=20&filter[full_name][ilike]=Ana%25', '/ilike'],
    ['sort=full_name', '/v1/customers?limit=20&sort=full_name', '/sort'],
    ['customer by id', `/v1/customers/${deepRow!.id}`, `/customer?id=${deepRow!.id}`],
    ['sale with items, history', `/v1/sales/${data.saleId}?include=items,status_history`, `/sale?id=${data.saleId}`],
    ['GET /v1/me', '/v1/me', '/me'],
  ];
  for (const [name, balcaoPath, barePath] of scenarios) {
    results[name] = await paired(
      `${name}: GET ${balcaoPath.slice(0, 80)}`,
      ['balcao', balcao, { path: balcaoPath, headers: read }],
      ['bare', bare, { path: barePath }],
      pgPids,
    );
  }
  const item = { catalog_type: 'product', catalog_item_id: '00000000-0000-4000-8000-000000000001', quantity: 2, unit_price: 10 };
  const saleBody = JSON.stringify({ items: Array.from({ length: 10 }, () => item) });
  results.post = await paired(
    'POST /v1/sales with 10 items and an Idempotency-Key, against one bare transaction inserting the same rows',
    ['balcao', balcao, { path: '/v1/sales', method: 'POST', headers: write, body: saleBody, idempotent: true }],
    ['bare', bare, { path: '/sale', method: 'POST', body: saleBody }],
    pgPids,
    { alone: true, ceiling: ['bare + capture', bareCaptured, { path: '/sale', method: 'POST', body: saleBody }] },
  );
  results.patchCustomer = await paired(
    'PATCH /v1/customers/{id} (notes), spread over 1 000 customers, against one bare UPDATE … RETURNING',
    ['balcao', balcao, { path: '/v1/customers/{id}', method: 'PATCH', headers: write, body: '{"notes":"{n}"}', ids: customerIds }],
    ['bare', bare, { path: '/customer?id={id}', method: 'PATCH', body: '{"notes":"{n}"}', ids: customerIds }],
    pgPids,
    {
      alone: true,
      ceiling: ['bare + capture', bareCaptured, { path: '/customer?id={id}', method: 'PATCH', body: '{"notes":"{n}"}', ids: customerIds }],
    },
  );
  results.saleStatus = await paired(
    'PATCH /v1/sales/{id} (a status change: history appended), spread over 1 000 sales, against one bare transaction doing the same',
    ['balcao', balcao, { path: '/v1/sales/{id}', method: 'PATCH', headers: write, body: '{"status":"{n}"}', ids: saleIds }],
    ['bare', bare, { path: '/sale?id={id}', method: 'PATCH', body: '{"status":"{n}"}', ids: saleIds }],
    pgPids,
    {
      alone: true,
      ceiling: ['bare + capture', bareCaptured, { path: '/sale?id={id}', method: 'PATCH', body: '{"status":"{n}"}', ids: saleIds }],
    },
  );
  let captureRate = Number.NaN;
  if (!ONLY || ONLY.some((word) => 'capture'.includes(word)))
    captureRate = await captureThroughput(pg.url, data.accountId, Math.min(100_000, CUSTOMERS), balcao);
  // What the request logs cost: the same server with logging at the default level and at warn.
  results.logs = await paired(
    'first page, logs at the default level against LOG_LEVEL=warn (the cost of the request logs)',
    ['balcao', balcao, { path: '/v1/customers?limit=20', headers: read }],
    ['balcao, warn', () => startBalcao(pg.url, { logLevel: 'warn' }), { path: '/v1/customers?limit=20', headers: read }],
    pgPids,
  );
  const withRedis = () => startBalcao(pg.url, { redisUrl: redis.url });
  results.redis = await paired(
    'first page, rate limits counted in Redis',
    ['balcao+redis', withRedis, { path: '/v1/customers?limit=20', headers: read }],
    ['bare', bare, { path: '/first' }],
    pgPids,
  );
  results.workers = await paired(
    'first page, 2 workers against 1 (both with Redis)',
    ['2 workers', () => startBalcao(pg.url, { redisUrl: redis.url, workers: 2 }), { path: '/v1/customers?limit=20', headers: read }],
    ['1 worker', withRedis, { path: '/v1/customers?limit=20', headers: read }],
    pgPids,
  );

  Object.assign(
    results,
    await tracesScenarios(pg.url, pgPids, {
      read: { path: '/v1/customers?limit=20', headers: read },
      write: { path: '/v1/sales', method: 'POST', headers: write, body: saleBody, idempotent: true },
    }),
  );

  const rss = Math.max(...Object.values(results).map((r) => r.a.rss));
  const first = results['first page']!;
  const deep = Object.entries(results).find(([k]) => k.startsWith('page '))![1];
  const check = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log('\ntargets (of the scenarios that ran)');
  const ran = (name: string) => !Number.isNaN(results[name]?.ratio ?? Number.NaN);
  for (const [name] of scenarios)
    if (ran(name))
      console.log(`  ${name.padEnd(30)} ${results[name]!.ratio.toFixed(2)}× bare (≥ 0.9: ${check(results[name]!.ratio >= 0.9)})`);
  if (ran('first page') && Object.keys(results).some((k) => k.startsWith('page ') && ran(k)))
    console.log(
      `  deep page p50 ÷ first page p50 ${(deep.a.p50 / Math.max(first.a.p50, 1)).toFixed(2)}× (≤ 1.1: ${check(deep.a.p50 <= 1.1 * Math.max(first.a.p50, 1))})`,
    );
  if (ran('post')) {
    const post = results.post!;
    const pgRatio = post.a.pgCpuMs / Math.max(post.b.pgCpuMs, 1e-9);
    console.log(`  POST sale                      ${post.ratio.toFixed(2)}× bare (≥ 0.6: ${check(post.ratio >= 0.6)})`);
    console.log(`  PostgreSQL CPU per sale        ${pgRatio.toFixed(2)}× bare (≤ 1.5: ${check(pgRatio <= 1.5)})`);
  }
  // Beside each write's target, the most a server whose writes are captured reaches (the bare server with the capture).
  const within = (key: 'post' | 'patchCustomer' | 'saleStatus') => {
    const ceiling = results[key]!.ceiling ?? Number.NaN;
    return Number.isNaN(ceiling) ? '' : `; bare + capture ${ceiling.toFixed(2)}×`;
  };
  if (ran('post'))
    console.log(
      `  POST sale (events captured)    ${results.post!.ratio.toFixed(2)}× bare (≥ 1.0: ${check(results.post!.ratio >= 1.0)}${within('post')})`,
    );
  for (const [key, label] of [
    ['patchCustomer', 'PATCH customer'],
    ['saleStatus', 'sale status change'],
  ] as const)
    if (ran(key))
      console.log(
        `  ${label.padEnd(30)} ${results[key]!.ratio.toFixed(2)}× bare (≥ 0.6: ${check(results[key]!.ratio >= 0.6)}${within(key)})`,
      );
  if (!Number.isNaN(captureRate))
    console.log(`  capture from an outside writer ${captureRate.toFixed(0)} changes/s (≥ 5 000: ${check(captureRate >= 5000)})`);
  if (captureLags.length > 0) {
    const sorted = [...captureLags].sort((x, y) => x - y);
    const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
    console.log(
      `  capture lag under the writes   p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms over ${sorted.length} samples (p99 ≤ 1 000 ms: ${check(p99 <= 1000)})`,
    );
  }
  console.log(`  RSS per worker under load      ${rss.toFixed(0)} MB (≤ 150: ${check(rss <= 150)})`);
  if (ran('tracesOff'))
    console.log(
      `  traces off ÷ without           ${results.tracesOff!.ratio.toFixed(2)}× (≥ 0.97, equal within noise: ${check(results.tracesOff!.ratio >= 0.97)})`,
    );
  for (const [key, label] of [
    ['tracesOnRead', 'traces on ÷ off, first page'],
    ['tracesOnWrite', 'traces on ÷ off, POST sale'],
  ] as const)
    if (ran(key)) {
      const r = results[key]!;
      console.log(
        `  ${label.padEnd(30)} ${r.ratio.toFixed(2)}× req/s; CPU per request ${(r.a.nodeCpuMs / Math.max(r.b.nodeCpuMs, 1e-9)).toFixed(2)}× (node), p99 ${(r.a.p99 / Math.max(r.b.p99, 1e-9)).toFixed(2)}×`,
      );
    }
  if (ran('workers'))
    console.log(`  2 workers ÷ 1                  ${results.workers!.ratio.toFixed(2)}× (≥ 1.5: ${check(results.workers!.ratio >= 1.5)})`);
  console.log(`\nbench finished in ${((performance.now() - started) / 1000).toFixed(0)} s`);
} finally {
  for (const server of running) await server.stop();
  await lagProbe?.end();
  redis.stop();
  pg.stop();
}
