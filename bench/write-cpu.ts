// `BENCH_PART=write-cpu npm run bench`: Node's CPU per `PATCH /v1/customers/{id}`, split in two. One `balcao serve`
// takes the slot and makes the events (it serves nothing), a second one serves the PATCHes; the bare server serves the
// same PATCHes alone. For each, user and system CPU (from /proc) over a fixed count of requests after a warm-up: what
// the HTTP write costs apart from its event. A sampling profile counts a process waiting for a core inside the system
// call it made (a socket write that woke PostgreSQL): /proc's system time is what the kernel really spent.
// PostgreSQL's CPU per request is counted too (every process of the cluster, the capture's walsender included).
// Env: BENCH_CUSTOMERS (50000), BENCH_REQUESTS (5000) measured after BENCH_WARMUP_REQUESTS (6000), BENCH_CONNECTIONS (8),
// BENCH_PAIRS (2); BENCH_OTHER_BUILD, the folder of another built checkout, served as a third side ("other") to compare
// two builds in one run; BENCH_WRITE_PROFILE, a folder for a --cpu-prof of each serving Balcão (the capturing one
// into <folder>/capture).
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { benchPostgres } from './bench-postgres.ts';
import { ensureDataset } from './dataset.ts';
import { cpuSeconds, stopChild, waitForLine } from './throwaway-servers.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 50_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5_000);
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 6_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 2);

/** User and system CPU of a process so far, in ms. */
function cpuMs(pid: number): { user: number; sys: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10, sys: Number(fields[12]) * 10 };
}

const { pg, dir } = await benchPostgres(CUSTOMERS);
const servers: ChildProcess[] = [];
try {
  const data = await ensureDataset(pg.url, dir, CUSTOMERS);
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const ids = (await admin.unsafe(`SELECT id FROM customers WHERE team_id = $1 AND mode = 'live' LIMIT 1000`, [data.accountId])).map((r) =>
    String(r.id),
  );
  await admin.end();
  const env = { ...process.env, DATABASE_URL: pg.url, PORT: '0', HOST: '127.0.0.1', ACCOUNT_ID: data.accountId } as Record<string, string>;
  delete env.REDIS_URL;
  delete env.LOG_LEVEL;
  const start = async (args: string[], what: string) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    servers.push(child);
    const line = await waitForLine(child, what);
    child.stdout?.resume();
    child.stderr?.resume();
    return { child, line };
  };
  const balcaoOf = (checkout: string) => ['--max-old-space-size=512', path.join(checkout, 'bin/balcao.js'), 'serve', '--json'];
  const balcao = balcaoOf(root);
  const other = process.env.BENCH_OTHER_BUILD;
  const profileDir = process.env.BENCH_WRITE_PROFILE;
  const profiled = (args: string[]) => (profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...args] : args);
  // Started first, it takes the replication slot; the serving instance then only serves.
  const capturer = await start(
    profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}/capture`, ...balcao] : balcao,
    'capturing balcao serve',
  );
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  console.log(
    `write CPU: PATCH of a customer's notes over 1 000 customers, ${WARMUP} requests to warm up, ${REQUESTS} measured, ${CONNECTIONS} connections`,
  );
  let n = 0;
  for (let pair = 0; pair < PAIRS; pair++) {
    const sides = other ? ['balcao', 'other', 'bare'] : ['balcao', 'bare'];
    for (const side of pair % 2 === 0 ? sides : sides.reverse()) {
      const bare = side === 'bare';
      const server = bare
        ? await start([path.join(root, 'bench/bare-server.js')], 'bare server')
        : await start(profiled(side === 'other' ? balcaoOf(other as string) : balcao), 'balcao serve');
      const url = bare ? `http://127.0.0.1:${server.line.trim()}` : String(JSON.parse(server.line).url);
      const run = (amount: number) =>
        autocannon({
          url,
          connections: CONNECTIONS,
          amount,
          headers: { authorization: `Bearer ${data.writeKey}`, 'content-type': 'application/json' },
          requests: [
            {
              method: 'PATCH',
              setupRequest: (req: autocannon.Request) => {
                const id = ids[n++ % ids.length];
                return {
                  ...req,
                  path: bare ? `/customer?id=${id}` : `/v1/customers/${id}`,
                  body: JSON.stringify({ notes: `write cpu ${n}` }),
                };
              },
            },
          ],
        });
      await run(WARMUP);
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // the capture catches up
      const pid = server.child.pid!;
      const before = cpuMs(pid);
      const capturedBefore = cpuMs(capturer.child.pid!);
      const postgresBefore = cpuSeconds(pg.pids());
      const result = await run(REQUESTS);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const after = cpuMs(pid);
      const captured = cpuMs(capturer.child.pid!);
      const postgresMs = (cpuSeconds(pg.pids()) - postgresBefore) * 1000;
      const per = (ms: number) => (ms / REQUESTS).toFixed(3);
      const line = `  ${side.padEnd(7)} serving: user ${per(after.user - before.user)} ms, system ${per(after.sys - before.sys)} ms per request; PostgreSQL ${per(postgresMs)} ms (${result.non2xx} not 2xx)`;
      console.log(
        bare
          ? line
          : `${line}; capturing instance: user ${per(captured.user - capturedBefore.user)} ms, system ${per(captured.sys - capturedBefore.sys)} ms`,
      );
      await stopChild(server.child);
    }
  }
} finally {
  for (const child of servers) await stopChild(child);
  pg.stop();
}
