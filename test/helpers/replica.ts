// A throwaway PostgreSQL primary with one streaming replica of the test's own, on free loopback ports: the
// primary with wal_level=logical (capture), the replica made by `pg_basebackup -R` (standby.signal and primary_conninfo)
// and started as a hot standby, optionally with a replay delay (recovery_min_apply_delay). The replica can be
// stopped and started under traffic. Both run in the foreground under a bash that waits on our pipe (as in
// postgres-server.ts): when the test process ends for any reason the servers stop, so no run leaves one behind.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { freePort } from './free-port.ts';

const BIN = process.env.TEST_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

const runAs = (args: string[]): [string, string[]] =>
  asRoot ? ['runuser', ['-u', 'postgres', '--', ...args]] : [args[0] as string, args.slice(1)];

export interface ServerProcess {
  url: string;
  port: number;
  /** Fast shutdown; resolves once the server process is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** PIDs of the server's processes (postmaster and its children), for CPU accounting (bench/replica.ts). */
  pids(): number[];
}

export interface PrimaryWithReplica {
  primary: ServerProcess;
  replica: ServerProcess;
  /** Sets the replica's replay delay (0: none) and reloads its configuration. */
  setReplayDelay(ms: number): Promise<void>;
  /** Resolves once the replica has replayed everything the primary had written when called. */
  caughtUp(): Promise<void>;
  /** Stops both and deletes their data. */
  destroy(): Promise<void>;
}

function serverProcess(data: string, port: number, settings: string[]): ServerProcess {
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const flags = ['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'fsync=off', 'max_connections=60', ...settings];
    const [cmd, args] = runAs([path.join(BIN, 'postgres'), '-D', data, '-p', String(port), ...flags.flatMap((f) => ['-c', f])]);
    const quoted = [cmd, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const script = `${quoted} >>'${data}/../server-${port}.log' 2>&1 </dev/null &
read -r _ || true
pid=$(head -1 '${data}/postmaster.pid' 2>/dev/null)
[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null
wait
exit 0`;
    child = spawn('bash', ['-c', script], { stdio: ['pipe', 'ignore', 'inherit'] });
    const current = child;
    exited = new Promise((resolve) => current.once('exit', () => resolve()));
    await waitUntilAccepting(url);
  };
  const stop = async () => {
    child?.stdin?.end();
    await exited;
    child = undefined;
  };
  const pids = () => {
    const postmaster = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = fs.readdirSync('/proc').filter((entry) => {
      if (!/^\d+$/.test(entry)) return false;
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false; // exited meanwhile
      }
    });
    return [postmaster, ...children.map(Number)];
  };
  return { url, port, start, stop, pids };
}

export async function startPrimaryWithReplica(): Promise<PrimaryWithReplica> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-replica-'));
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const primaryData = path.join(dir, 'primary');
  const replicaData = path.join(dir, 'replica');
  const run = (args: string[]) => {
    const [cmd, rest] = runAs(args);
    execFileSync(cmd, rest, { stdio: 'ignore' });
  };
  run([path.join(BIN, 'initdb'), '-D', primaryData, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const primary = serverProcess(primaryData, await freePort(), ['wal_level=logical', 'max_wal_senders=10']);
  await primary.start();
  // initdb's pg_hba.conf lets loopback connections replicate (trust, as every other connection here).
  run([
    path.join(BIN, 'pg_basebackup'),
    '-D',
    replicaData,
    '-h',
    '127.0.0.1',
    '-p',
    String(primary.port),
    '-U',
    'postgres',
    '-R',
    '-X',
    'stream',
  ]);
  // Sent by the standby with its feedback: it reports replay progress to the primary often.
  const replica = serverProcess(replicaData, await freePort(), ['hot_standby=on', 'wal_receiver_status_interval=1s']);
  await replica.start();

  const admin = (url: string) => postgres(url, { max: 1, onnotice: () => {} });
  return {
    primary,
    replica,
    async setReplayDelay(ms) {
      // ALTER SYSTEM is refused on a standby (read-only): the setting goes in its configuration file, then a reload.
      const file = path.join(replicaData, 'postgresql.auto.conf');
      const kept = fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !line.startsWith('recovery_min_apply_delay'));
      fs.writeFileSync(file, `${kept.join('\n').trimEnd()}\nrecovery_min_apply_delay = '${ms}ms'\n`);
      const sql = admin(replica.url);
      try {
        await sql`select pg_reload_conf()`;
        // The reload is asynchronous: wait until the server shows the new value.
        for (;;) {
          const [row] = await sql<{ setting: string }[]>`select setting from pg_settings where name = 'recovery_min_apply_delay'`;
          if (Number(row?.setting) === ms) return;
          await new Promise((r) => setTimeout(r, 20));
        }
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
    async caughtUp() {
      const p = admin(primary.url);
      const r = admin(replica.url);
      try {
        const [{ lsn }] = (await p`select pg_current_wal_insert_lsn()::text as lsn`) as unknown as [{ lsn: string }];
        for (;;) {
          const [row] = await r<{ behind: boolean }[]>`select pg_last_wal_replay_lsn() < ${lsn}::pg_lsn as behind`;
          if (row && !row.behind) return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await p.end({ timeout: 1 });
        await r.end({ timeout: 1 });
      }
    },
    async destroy() {
      await replica.stop();
      await primary.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitUntilAccepting(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`SELECT 1`;
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
}
