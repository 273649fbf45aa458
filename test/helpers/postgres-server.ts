// A throwaway PostgreSQL server of the test's own, on a free loopback port, that the test may stop and start
// (never the shared one). It runs in the foreground under a bash that waits on our pipe: when the test
// process ends for any reason, the pipe closes and the server is stopped, so no run leaves one behind.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { freePort } from './free-port.ts';
import { until } from './poll.ts';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';

const BIN = process.env.TEST_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

export interface OwnPostgres {
  url: string;
  port: number;
  /** Fast shutdown; resolves once the server process is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

const runAs = (args: string[]): [string, string[]] =>
  asRoot ? ['runuser', ['-u', 'postgres', '--', ...args]] : [args[0] as string, args.slice(1)];

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const [cmd, args] = runAs([path.join(BIN, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  execFileSync(cmd, args, { stdio: 'ignore' });
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const [pgCmd, pgArgs] = runAs([
      path.join(BIN, 'postgres'),
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=60',
      '-c',
      'wal_level=logical',
    ]);
    const quoted = [pgCmd, ...pgArgs].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const script = `${quoted} >/dev/null 2>&1 </dev/null &
read -r _ || true
pid=$(head -1 '${data}/postmaster.pid' 2>/dev/null)
[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null
wait
exit 0`;
    child = spawn('bash', ['-c', script], { stdio: ['pipe', 'ignore', 'inherit'] });
    const current = child;
    exited = new Promise((resolve) => current.once('exit', () => resolve()));
    await waitUntilAccepting(`postgres://postgres@127.0.0.1:${port}/postgres`);
  };
  const stop = async () => {
    child?.stdin?.end();
    await exited;
    child = undefined;
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy: async () => {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitUntilAccepting(url: string): Promise<void> {
  await until(
    'the test PostgreSQL accepts connections',
    async () => {
      const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
      try {
        await sql`SELECT 1`;
        return true;
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
    { withinMs: 30_000, everyMs: 100 },
  );
}
