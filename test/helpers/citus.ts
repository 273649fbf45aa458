// Test databases on a Citus cluster (scripts/citus-check.sh): with TEST_CITUS_WORKERS set
// ("host:port,host:port"), a fresh database made on the coordinator (TEST_DATABASE_URL) is made on
// every worker too, with the citus extension and the workers added (Citus keeps its node metadata
// per database), and is distributed (migrations/citus/distribute.sql) once migrated.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';

const DISTRIBUTE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations/citus/distribute.sql');

const workers = (): URL[] =>
  (process.env.TEST_CITUS_WORKERS ?? '')
    .split(',')
    .filter(Boolean)
    .map((hostPort) => new URL(`postgres://postgres@${hostPort}/postgres`));

export const onCitus = (): boolean => workers().length > 0;

async function run(url: URL | string, text: string): Promise<void> {
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(text);
  } finally {
    await sql.end();
  }
}

const inDatabase = (url: URL | string, name: string): URL => {
  const u = new URL(url.toString());
  u.pathname = `/${name}`;
  return u;
};

/** Makes the database `name` (already created on the coordinator) a Citus database over the workers. */
export async function prepareCitusDatabase(adminUrl: string, name: string): Promise<void> {
  for (const worker of workers()) {
    await run(worker, `CREATE DATABASE ${name}`);
    await run(inDatabase(worker, name), 'CREATE EXTENSION citus');
  }
  const coordinator = new URL(adminUrl);
  const adds = workers()
    .map((w) => `SELECT citus_add_node('${w.hostname}', ${Number(w.port)});`)
    .join('\n');
  await run(
    inDatabase(adminUrl, name),
    `CREATE EXTENSION citus; SELECT citus_set_coordinator_host('${coordinator.hostname}', ${Number(coordinator.port)}); ${adds}`,
  );
}

/** Distributes the migrated database `name` (the operator's step after `balcao migrate`). */
export async function distributeCitusDatabase(adminUrl: string, name: string): Promise<void> {
  await run(inDatabase(adminUrl, name), fs.readFileSync(DISTRIBUTE, 'utf8'));
}

export async function dropCitusDatabase(name: string): Promise<void> {
  for (const worker of workers()) await run(worker, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** A worker's data directory by its port (TEST_CITUS_NODE_DIRS, "port=dir,…", set by scripts/citus-check.sh), for a
 *  test that restarts it. */
export function citusNodeDir(port: number): string | undefined {
  for (const entry of (process.env.TEST_CITUS_NODE_DIRS ?? '').split(',')) {
    const [at, dir] = entry.split('=');
    if (Number(at) === port && dir) return dir;
  }
  return undefined;
}

/** Restarts the Citus node whose data directory is `dir` (fast stop, then start with its last options). */
export function restartCitusNode(dir: string): void {
  execFileSync(
    'su',
    ['postgres', '-c', `${process.env.TEST_CITUS_PGBIN ?? '/usr/lib/postgresql/15/bin'}/pg_ctl -D ${dir} -l ${dir}.log -m fast -w restart`],
    {
      stdio: 'ignore',
    },
  );
}
