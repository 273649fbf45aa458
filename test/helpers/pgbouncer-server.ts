// A throwaway PgBouncer of the test's own (Debian's package), in transaction pooling mode, on a free
// loopback port in front of a PostgreSQL server: its configuration is deploy/pgbouncer.ini, the file
// the operator's guide and scripts/topology.sh use, rendered with envsubst. Stopped by its PID.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { freePort } from './free-port.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PGBOUNCER_TEMPLATE = path.join(ROOT, 'deploy/pgbouncer.ini');

export interface OwnPgBouncer {
  /** `postgres://user@127.0.0.1:<port>/<database>` through PgBouncer. */
  url: string;
  stop(): Promise<void>;
}

/** PgBouncer in front of `target` (a PostgreSQL URL), at most `poolSize` server connections. */
export async function startPgBouncer(target: string, poolSize = 3): Promise<OwnPgBouncer> {
  const t = new URL(target);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-pgbouncer-'));
  const port = await freePort();
  const dbname = decodeURIComponent(t.pathname.slice(1)) || 'postgres';
  const user = decodeURIComponent(t.username) || 'postgres';
  const vars: Record<string, string> = {
    PGBOUNCER_DBNAME: dbname,
    PG_HOST: t.hostname,
    PG_PORT: t.port || '5432',
    PG_DBNAME: dbname,
    PGBOUNCER_PORT: String(port),
    PGBOUNCER_DIR: dir,
    PGBOUNCER_AUTH_TYPE: 'trust',
    PGBOUNCER_POOL_SIZE: String(poolSize),
  };
  const ini = execFileSync(
    'envsubst',
    [
      Object.keys(vars)
        .map((k) => `$${k}`)
        .join(' '),
    ],
    {
      input: fs.readFileSync(PGBOUNCER_TEMPLATE, 'utf8'),
      env: { ...process.env, ...vars },
    },
  ).toString();
  fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), ini);
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
  // PgBouncer refuses to run as root: it switches to the postgres user (-u), which must write its log.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync('chown', ['-R', 'postgres', dir]);
  const child: ChildProcess = spawn('pgbouncer', [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(dbname)}`;
  // Ready once a query goes through it (it listens within milliseconds of starting).
  for (let attempt = 0; ; attempt++) {
    const probe = postgres(url, { max: 1, prepare: false, onnotice: () => {}, connect_timeout: 2 });
    try {
      await probe.unsafe('select 1');
      break;
    } catch (err) {
      if (attempt >= 100 || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`pgbouncer did not start: ${String(err)}; ${readLog(dir)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await probe.end();
    }
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readLog(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8').slice(-2000);
  } catch {
    return '';
  }
}
