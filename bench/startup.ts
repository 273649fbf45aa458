// `npm run bench:startup`: how long the compiled CLI takes to start, as a user meets it.
// Prints the median of BENCH_RUNS runs (default 5) of: `balcao --help`; `balcao keys create` on
// PostgreSQL (a throwaway cluster, or BENCH_DATABASE_URL); `balcao serve` on an existing embedded
// data folder until /health/ready answers 200; then the first requests such a server answers
// (each route compiles its validator and serializer on first use). Everything on loopback.
// BENCH_BASELINE=<another built checkout> alternates its `serve` with this one's, run for run, and
// prints each one's medians and the median of the paired ratios (this ÷ baseline): on a shared
// machine only a side-by-side ratio means anything.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, freePort, startPostgres } from './throwaway-servers.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin/balcao.js');
const runs = Number(process.env.BENCH_RUNS ?? 5);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-startup-'));
if (process.getuid?.() === 0) fs.chmodSync(work, 0o755);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const show = (what: string, times: number[], target?: number) =>
  console.log(
    `${what.padEnd(44)} median ${seconds(median(times))}  (${times.map((t) => (t / 1000).toFixed(2)).join(', ')})` +
      (target ? `  target ≤ ${seconds(target)}: ${median(times) <= target ? 'met' : 'NOT met'}` : ''),
  );

/** Runs the CLI to completion; resolves to its stdout. */
function balcao(args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
}

function timed(fn: () => void): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

function get(port: number, pathname: string, headers: http.OutgoingHttpHeaders = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: pathname, headers, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.setTimeout(10_000, () => request.destroy(new Error('timeout')));
  });
}

async function timedGet(port: number, pathname: string, headers?: http.OutgoingHttpHeaders): Promise<number> {
  const started = performance.now();
  const status = await get(port, pathname, headers);
  if (status !== 200) throw new Error(`GET ${pathname} answered ${status}`);
  return performance.now() - started;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Starts `balcao serve` and polls readiness every 5 ms; resolves to the time to ready, and the first requests' times. */
async function serveOnce(env: NodeJS.ProcessEnv, key: string, serveBin = bin) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [serveBin, 'serve', '--json'], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  try {
    const deadline = started + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`balcao serve exited with ${child.exitCode}`);
      if (performance.now() > deadline) throw new Error('balcao serve was not ready within 60 s');
      const status = await get(port, '/health/ready').catch(() => 0);
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const ready = performance.now() - started;
    // CPU time (every thread: V8 compiles WebAssembly and collects garbage on its own) moves less than
    // wall time when the machine is shared.
    const readyCpu = cpuSeconds([child.pid!]) * 1000;
    const auth = { authorization: `Bearer ${key}` };
    const firstList = await timedGet(port, '/v1/customers?limit=20', auth);
    const secondList = await timedGet(port, '/v1/customers?limit=20', auth);
    const firstDocument = await timedGet(port, '/v1/openapi.json');
    return { ready, readyCpu, firstList, secondList, firstDocument };
  } finally {
    await stop(child);
  }
}

delete process.env.DATABASE_URL; // each step names its own database
try {
  console.log(
    `node ${process.version}, ${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );

  show(
    'balcao --help',
    Array.from({ length: runs }, () => timed(() => balcao(['--help'], {}))),
    300,
  );

  const postgresEnv: NodeJS.ProcessEnv = { BALCAO_DATA_DIR: path.join(work, 'unused') };
  let stopPostgres = () => {};
  if (process.env.BENCH_DATABASE_URL) postgresEnv.DATABASE_URL = process.env.BENCH_DATABASE_URL;
  else {
    const pg = await startPostgres(path.join(work, 'pg'));
    postgresEnv.DATABASE_URL = pg.url;
    stopPostgres = pg.stop;
  }
  try {
    const account = JSON.parse(balcao(['accounts', 'create', '--name', 'Start-up', '--plan', 'enterprise', '--json'], postgresEnv)) as {
      id: string;
    };
    const keysCreate = ['keys', 'create', '--account', account.id, '--name', 'start-up', '--json'];
    show(
      'balcao keys create (PostgreSQL)',
      Array.from({ length: runs }, () => timed(() => balcao(keysCreate, postgresEnv))),
      1000,
    );
  } finally {
    stopPostgres();
  }

  // An existing embedded data folder: created and migrated once, with one account and key.
  const embeddedEnv: NodeJS.ProcessEnv = { BALCAO_DATA_DIR: path.join(work, 'embedded'), LOG_LEVEL: 'warn' };
  const account = JSON.parse(
    balcao(['accounts', 'create', '--name', 'Start-up', '--plan', 'enterprise', '--modules', 'all', '--json'], embeddedEnv),
  ) as { id: string };
  const { key } = JSON.parse(
    balcao(['keys', 'create', '--account', account.id, '--name', 'start-up', '--scopes', '*:read', '--json'], embeddedEnv),
  ) as { key: string };
  const baselineBin = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE, 'bin/balcao.js') : undefined;
  const served: Awaited<ReturnType<typeof serveOnce>>[] = [];
  const baseline: typeof served = [];
  for (let i = 0; i < runs; i++) {
    if (baselineBin) baseline.push(await serveOnce(embeddedEnv, key, baselineBin));
    served.push(await serveOnce(embeddedEnv, key));
  }
  const report = (label: string, results: typeof served) => {
    show(
      `${label}balcao serve, embedded, to /health/ready 200`,
      results.map((s) => s.ready),
      1000,
    );
    show(
      `${label}  its CPU time (user + system) until then`,
      results.map((s) => s.readyCpu),
    );
    show(
      `${label}  then its first GET /v1/customers`,
      results.map((s) => s.firstList),
    );
    show(
      `${label}  and the second`,
      results.map((s) => s.secondList),
    );
    show(
      `${label}  then its first GET /v1/openapi.json`,
      results.map((s) => s.firstDocument),
    );
  };
  if (baselineBin) {
    report('baseline: ', baseline);
    report('this:     ', served);
    const ratio = (pick: (s: (typeof served)[number]) => number) => median(served.map((s, i) => pick(s) / pick(baseline[i]!))).toFixed(2);
    console.log(`this ÷ baseline, median of ${runs} pairs: ready ${ratio((s) => s.ready)}×, CPU until ready ${ratio((s) => s.readyCpu)}×`);
  } else report('', served);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
