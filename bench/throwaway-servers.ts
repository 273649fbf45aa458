// The benchmark's own PostgreSQL (initdb in a folder of its own, loopback, a free port) and
// Redis, started for one run and stopped by PID. Never the developer's or anyone else's servers.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { freePort } from '../test/helpers/free-port.ts';

export { freePort };

const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL binary as the `postgres` user when we are root (initdb refuses root). */
function pgCommand(binary: string, args: string[]): [string, string[]] {
  const file = path.join(PG_BIN, binary);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

export interface ThrowawayPostgres {
  url: string;
  port: number;
  /** PIDs of the server's processes (postmaster and backends), for CPU accounting. */
  pids(): number[];
  stop(): void;
}

/**
 * A PostgreSQL cluster in `dir` (created with initdb unless it exists already, so a loaded
 * dataset can be reused), started on a free loopback port.
 */
export async function startPostgres(dir: string): Promise<ThrowawayPostgres> {
  const dataDir = path.join(dir, 'pgdata');
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.mkdirSync(dataDir, { recursive: true });
    if (asRoot) execFileSync('chown', ['-R', 'postgres', dir]);
    const [cmd, args] = pgCommand('initdb', [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
    ]);
    execFileSync(cmd, args, { stdio: 'ignore' });
  }
  const port = await freePort();
  // Durability off: the dataset is rebuilt at will, and both servers under test share it.
  const options = [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${dataDir}'`,
    '-c max_connections=200',
    '-c wal_level=logical',
    '-c shared_buffers=256MB',
    '-c fsync=off',
    '-c synchronous_commit=off',
    // Logical decoding reads only flushed WAL: with commits not flushed, the WAL writer's default 200 ms between
    // flushes became the change capture's lag (and a feed read's wait for its key's last write), where production's
    // synchronous commits flush at once. 10 ms keeps commits cheap and that wait near production's.
    '-c wal_writer_delay=10ms',
    '-c full_page_writes=off',
    '-c max_wal_size=4GB',
    '-c log_min_messages=warning',
    // e.g. "-c shared_preload_libraries=pg_stat_statements" to see where the database's time goes
    process.env.BENCH_PG_OPTIONS ?? '',
  ].join(' ');
  const [cmd, args] = pgCommand('pg_ctl', [
    '-D',
    dataDir,
    '-o',
    options,
    '-l',
    path.join(dataDir, 'server.log'),
    '-w',
    '-t',
    '60',
    'start',
  ]);
  execFileSync(cmd, args, { stdio: 'ignore' });
  const postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      process.kill(postmasterPid, 'SIGINT'); // fast shutdown
      for (let i = 0; i < 100 && isAlive(postmasterPid); i++) execFileSync('sleep', ['0.1']);
    } catch {
      // already gone
    }
  };
  process.once('exit', stop);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, pids: () => [postmasterPid, ...childrenOf(postmasterPid)], stop };
}

export interface ThrowawayRedis {
  url: string;
  pid: number;
  stop(): void;
}

export async function startRedis(): Promise<ThrowawayRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
    { stdio: 'ignore' },
  );
  // A missing binary is reported as an 'error' event; unhandled, it would kill the benchmark with
  // a stack trace instead of saying what to install.
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  for (let i = 0; i < 100 && !spawnError; i++) {
    if (await canConnect(port)) return { url: `redis://127.0.0.1:${port}`, pid: child.pid as number, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  stop();
  throw new Error(
    spawnError
      ? `redis-server could not be started (${spawnError.message}): install it (apt-get install redis-server)`
      : 'redis-server did not start (is it installed?)',
  );
}

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The direct children of `pid`, from /proc. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU seconds (user + system) used so far by these processes. */
export function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited meanwhile
    }
  }
  return ticks / 100; // USER_HZ
}

/** Resident memory of a process in MB. */
export function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** A new, empty database on the server at `adminUrl`, for one run; `drop` removes it. */
export async function freshDatabase(adminUrl: string, label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `balcao_bench_${label}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** The first line a child prints on stdout (its port, its URL), within 2 minutes. */
export function waitForLine(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${err}`)), 120_000);
    child.stderr?.on('data', (d) => {
      err = (err + d).slice(-4000);
    });
    child.stdout?.on('data', (d) => {
      out += d;
      // V8's traces (`[bailout …`, from diagnosis flags) go to stdout too: the server's line is the first other one.
      const line = out
        .split('\n')
        .slice(0, -1)
        .find((l) => !l.startsWith('['));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}: ${err}`)));
  });
}

/** SIGTERM, resolved once the child is gone. */
export const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

interface Stoppable {
  stop(): Promise<void>;
}

/**
 * A server started beside another that must run first (the bare server beside a capturing `balcao serve`): `stop`
 * stops the server, then the one beside it, which is also stopped if the server fails to start.
 */
export async function startBeside<B extends Stoppable, S extends Stoppable>(
  beside: () => Promise<B>,
  server: (beside: B) => Promise<S>,
): Promise<{ beside: B; server: S; stop(): Promise<void> }> {
  const first = await beside();
  try {
    const second = await server(first);
    return {
      beside: first,
      server: second,
      stop: async () => {
        await second.stop();
        await first.stop();
      },
    };
  } catch (error) {
    await first.stop();
    throw error;
  }
}
