// The PostgreSQL a benchmark runs on: a throwaway cluster of its own (bench/throwaway-servers.ts), or, with
// BENCH_DATABASE_URL, a server the developer already runs (its postmaster found from BENCH_PG_DATA/postmaster.pid,
// for the CPU accounting; left running at the end). The loaded dataset's record (meta.json) is kept in a folder
// named after that server, so two servers' datasets are not mistaken for each other.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childrenOf, startPostgres, type ThrowawayPostgres } from './throwaway-servers.ts';

export async function benchPostgres(customers: number): Promise<{ pg: ThrowawayPostgres; dir: string }> {
  const external = process.env.BENCH_DATABASE_URL;
  if (!external) {
    const dir = process.env.BENCH_DIR ?? path.join(os.tmpdir(), `balcao-bench-pg-${customers}`);
    return { pg: await startPostgres(dir), dir };
  }
  const url = new URL(external);
  const dir = process.env.BENCH_DIR ?? path.join(os.tmpdir(), `balcao-bench-db-${url.port}-${customers}`);
  fs.mkdirSync(dir, { recursive: true });
  const dataDir = process.env.BENCH_PG_DATA;
  const postmaster = dataDir ? Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) : undefined;
  return {
    pg: {
      url: external,
      port: Number(url.port || 5432),
      pids: () => (postmaster ? [postmaster, ...childrenOf(postmaster)] : []),
      stop: () => {},
    },
    dir,
  };
}
