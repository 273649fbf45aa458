// `BENCH_PART=first-page npm run bench`: the first page of `GET /v1/customers?limit=20` against PostgreSQL's own
// ceiling on the same statement (`pgbench -M prepared`, the account and mode as parameters, as Balcão sends them),
// and, with BENCH_BEFORE=<git ref>, against a build of that ref: what one change bought, paired in one run.
// Sides take turns, the order reversed every other pair; each Balcão is started afresh and warmed up before its
// round (bench/http-bench.ts says why). Printed per side: req/s, p50, p99, errors, Node and PostgreSQL CPU per
// request (medians of the rounds); the ratios are the medians of the pairs' ratios.
// With BENCH_BARE=1 two more sides: the bare baseline (bench/bare-server.js: node:http and postgres.js, no
// framework, auth, limits or logs) on the same page, and the same server passing on the page's JSON as PostgreSQL
// wrote it (no rows parsed, no objects built, nothing serialized in Node): what Node's share costs at its least.
// BENCH_QUIET=1 adds Balcão at LOG_LEVEL=warn: what the access log costs.
// Env: BENCH_CUSTOMERS (50000), BENCH_PAIRS (3), BENCH_SECONDS (3), BENCH_WARMUP (4), BENCH_CONNECTIONS (50),
// BENCH_BEFORE (a git ref), BENCH_BARE, BENCH_DATABASE_URL and BENCH_PG_DATA (a running server: bench-postgres.ts).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchPostgres } from './bench-postgres.ts';
import { buildCheckout } from './checkout.ts';
import { ensureDataset } from './dataset.ts';
import { cpuSeconds } from './throwaway-servers.ts';
import { wrk } from './wrk.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The Node flags a checkout's `balcao` runs with (the `#!` line of its bin/balcao.js): each side launched as its own. */
const launcherFlags = (checkout: string): string[] =>
  fs
    .readFileSync(path.join(checkout, 'bin/balcao.js'), 'utf8')
    .split('\n')[0]!
    .match(/--[\w-]+(?:=\S+)?/g) ?? [];
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 50_000);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const BEFORE = process.env.BENCH_BEFORE;
const BARE = process.env.BENCH_BARE === '1';
const QUIET = process.env.BENCH_QUIET === '1';
const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const PAGE = '/v1/customers?limit=20';

// The statement Balcão sends for the first page. pgbench reads every `:word` as a variable, even in a literal, so
// the cursor's to_char format spells its separators without colons: the same work for PostgreSQL.
const COLUMNS = [
  'id',
  'full_name',
  'email',
  'phone',
  'document',
  'birth_date',
  'notes',
  'is_active',
  'gender',
  'address_country',
  'address_state',
  'address_city',
  'address_neighborhood',
  'address_street',
  'address_number',
  'address_complement',
  'address_zip_code',
  'accepts_communications',
  'valid_whatsapp',
  'profile_photo_url',
  'whatsapp_photo',
  'external_id',
  'created_at',
  'updated_at',
];
const FIRST_PAGE_SQL = `select ${COLUMNS.map((c) => `"${c}"`).join(', ')}, to_char("created_at" at time zone 'UTC', 'YYYY-MM-DD"T"HH24"h"MI"m"SS.US"Z"') as "__cursor_value" from "customers" where "team_id" = :team and "mode" = :mode order by "created_at" desc, "id" desc limit 21;`;

interface Round {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  nodeCpuMs: number;
  pgCpuMs: number;
}

/**
 * CPU seconds of the cluster: its live processes, plus what the postmaster's exited children spent (pgbench's
 * backends end with pgbench, before the round's figures are read).
 */
function clusterCpu(pgPids: () => number[]): number {
  const pids = pgPids();
  let exited = 0;
  try {
    const stat = fs.readFileSync(`/proc/${pids[0]}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    exited = (Number(fields[13]) + Number(fields[14])) / 100; // cutime + cstime, USER_HZ
  } catch {
    // no postmaster known (BENCH_DATABASE_URL without BENCH_PG_DATA)
  }
  return cpuSeconds(pids) + exited;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function startBalcao(checkout: string, databaseUrl: string, logLevel?: string): Promise<{ base: string; child: ChildProcess }> {
  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1' } as Record<string, string>;
  for (const name of ['REDIS_URL', 'LOG_LEVEL']) delete env[name]; // limits in process, the default log level: as served
  if (logLevel) env.LOG_LEVEL = logLevel;
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name];
  const child = spawn(process.execPath, [...launcherFlags(checkout), path.join(checkout, 'bin/balcao.js'), 'serve', '--json'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // a session of its own, as a service (bench/http-bench.ts says why)
  });
  child.stderr?.resume(); // the log lines, drained as a shipper would read them
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('balcao serve did not start in 120 s')), 120_000);
    let out = '';
    child.stdout?.on('data', (d) => {
      out += d;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve({ base: JSON.parse(out.split('\n')[0]!).url, child });
      }
    });
    child.once('exit', (code) => reject(new Error(`balcao serve exited with ${code}`)));
  });
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

/** The bare baseline (bench/bare-server.js) for the dataset's account; its port is its first line. */
function startBare(databaseUrl: string, accountId: string): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(root, 'bench/bare-server.js')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ACCOUNT_ID: accountId },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stderr?.resume();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the bare server did not start in 60 s')), 60_000);
    let out = '';
    child.stdout?.on('data', (d) => {
      out += d;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve({ base: `http://127.0.0.1:${out.split('\n')[0]}`, child });
      }
    });
    child.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
}

async function serverRound(
  started: Promise<{ base: string; child: ChildProcess }>,
  page: string,
  headers: Record<string, string>,
  pgPids: () => number[],
): Promise<Round> {
  const { base, child } = await started;
  try {
    const load = { url: base + page, connections: CONNECTIONS, threads: 1, method: 'GET' as const, headers };
    await wrk({ ...load, seconds: WARMUP_SECONDS });
    const node0 = cpuSeconds([child.pid!]);
    const pg0 = clusterCpu(pgPids);
    const result = await wrk({ ...load, seconds: SECONDS });
    const total = result.requests || 1;
    return {
      rps: result.rps,
      p50: result.p50Ms,
      p99: result.p99Ms,
      errors: result.errors,
      nodeCpuMs: ((cpuSeconds([child.pid!]) - node0) * 1000) / total,
      pgCpuMs: ((clusterCpu(pgPids) - pg0) * 1000) / total,
    };
  } finally {
    await stop(child);
  }
}

/** pgbench on the same statement, warmed up in the same run; latencies from its per-transaction log. */
async function pgbenchRound(databaseUrl: string, accountId: string, pgPids: () => number[]): Promise<Round> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-pgbench-page-'));
  fs.chmodSync(dir, 0o777);
  try {
    const script = path.join(dir, 'first-page.sql');
    fs.writeFileSync(script, `${FIRST_PAGE_SQL}\n`);
    const url = new URL(databaseUrl);
    const args = ['-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username) || 'postgres', '-n'];
    args.push('-M', 'prepared', '-c', String(CONNECTIONS), '-j', '2', '-T', String(WARMUP_SECONDS + SECONDS), '-D', `team=${accountId}`);
    args.push('-D', 'mode=live', '-l', '--log-prefix', path.join(dir, 'log'), '-f', script, url.pathname.slice(1) || 'postgres');
    const opened = Date.now() / 1000 + WARMUP_SECONDS;
    let pg0 = 0;
    const warm = setTimeout(() => {
      pg0 = clusterCpu(pgPids);
    }, WARMUP_SECONDS * 1000);
    await new Promise<void>((resolve, reject) =>
      execFile(path.join(PG_BIN, 'pgbench'), args, { cwd: dir, timeout: (WARMUP_SECONDS + SECONDS + 60) * 1000 }, (error, _out, err) =>
        error ? reject(new Error(`pgbench failed: ${err || error.message}`)) : resolve(),
      ),
    );
    const pgCpu = clusterCpu(pgPids) - pg0;
    clearTimeout(warm);
    // Log lines: client_id transaction_no time(µs) script_no time_epoch time_us; the measured window's are the
    // transactions that ended after the warm-up.
    const latencies: number[] = [];
    for (const file of fs.readdirSync(dir).filter((name) => name.startsWith('log'))) {
      for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
        const fields = line.split(' ');
        if (line && Number(fields[4]) >= opened) latencies.push(Number(fields[2]) / 1000);
      }
    }
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
    return {
      rps: latencies.length / SECONDS,
      p50: at(0.5),
      p99: at(0.99),
      errors: 0,
      nodeCpuMs: 0,
      pgCpuMs: (pgCpu * 1000) / (latencies.length || 1),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function print(label: string, rounds: Round[]) {
  const m = (pick: (r: Round) => number) => median(rounds.map(pick));
  console.log(
    `  ${label.padEnd(10)} ${m((r) => r.rps)
      .toFixed(0)
      .padStart(6)} req/s  p50 ${m((r) => r.p50)
      .toFixed(1)
      .padStart(5)} ms  p99 ${m((r) => r.p99)
      .toFixed(1)
      .padStart(
        6,
      )} ms  errors ${rounds.reduce((s, r) => s + r.errors, 0)}  CPU/req Node ${m((r) => r.nodeCpuMs).toFixed(3)} ms, PostgreSQL ${m((r) => r.pgCpuMs).toFixed(3)} ms`,
  );
}

const { pg, dir } = await benchPostgres(CUSTOMERS);
const before = BEFORE ? await buildCheckout(BEFORE) : undefined;
try {
  const data = await ensureDataset(pg.url, dir, CUSTOMERS);
  type Side = [label: string, run: () => Promise<Round>];
  const auth = { authorization: `Bearer ${data.readKey}` };
  const sides: Side[] = [
    ['balcao', () => serverRound(startBalcao(root, pg.url), PAGE, auth, pg.pids)],
    ...(before ? [['before', () => serverRound(startBalcao(before.dir, pg.url), PAGE, auth, pg.pids)] as Side] : []),
    ...(QUIET ? [['quiet', () => serverRound(startBalcao(root, pg.url, 'warn'), PAGE, auth, pg.pids)] as Side] : []),
    ...(BARE
      ? ([
          ['bare', () => serverRound(startBare(pg.url, data.accountId), '/first', {}, pg.pids)],
          ['bare-json', () => serverRound(startBare(pg.url, data.accountId), '/first-json', {}, pg.pids)],
        ] as Side[])
      : []),
    ['pgbench', () => pgbenchRound(pg.url, data.accountId, pg.pids)],
  ];
  const rounds = new Map<string, Round[]>(sides.map(([label]) => [label, []]));
  console.log(`first page (${PAGE}), ${CUSTOMERS.toLocaleString('en')} customers, ${PAIRS} pairs of ${SECONDS} s rounds`);
  for (let i = 0; i < PAIRS; i++) {
    for (const [label, run] of i % 2 === 0 ? sides : [...sides].reverse()) rounds.get(label)!.push(await run());
  }
  for (const [label] of sides) print(label, rounds.get(label)!);
  const ratio = (a: string, b: string, pick: (r: Round) => number) => {
    const ra = rounds.get(a)!;
    const rb = rounds.get(b)!;
    const each = ra.map((r, k) => pick(r) / pick(rb[k]!));
    return `${median(each).toFixed(3)}× (pairs ${each.map((x) => x.toFixed(3)).join(', ')})`;
  };
  console.log(`  balcao ÷ pgbench, req/s: ${ratio('balcao', 'pgbench', (r) => r.rps)}`);
  if (QUIET)
    console.log(`  balcao ÷ quiet (LOG_LEVEL=warn: no access log), Node CPU per request: ${ratio('balcao', 'quiet', (r) => r.nodeCpuMs)}`);
  if (BARE) {
    console.log(`  bare ÷ pgbench, req/s: ${ratio('bare', 'pgbench', (r) => r.rps)}`);
    console.log(`  bare-json ÷ pgbench, req/s: ${ratio('bare-json', 'pgbench', (r) => r.rps)}`);
    console.log(`  balcao ÷ bare, req/s: ${ratio('balcao', 'bare', (r) => r.rps)}`);
  }
  if (before) {
    console.log(`  before ÷ pgbench, req/s: ${ratio('before', 'pgbench', (r) => r.rps)}`);
    console.log(`  balcao ÷ before (${BEFORE}), req/s: ${ratio('balcao', 'before', (r) => r.rps)}`);
    console.log(`  balcao ÷ before, Node CPU per request: ${ratio('balcao', 'before', (r) => r.nodeCpuMs)}`);
  }
  const reached = median(rounds.get('balcao')!.map((r, k) => r.rps / rounds.get('pgbench')![k]!.rps));
  console.log(
    `targets\n  first page ≥ 0.25× pgbench on the same statement: ${reached >= 0.25 ? 'met' : 'not met'} (${reached.toFixed(2)}×)`,
  );
} finally {
  before?.remove();
  pg.stop();
}
