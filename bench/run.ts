// `npm run bench`: every benchmark in turn, each in its own process so one's memory and JIT
// state do not colour the next. Each prints its own figures, compared side by side as ratios.
// Environment: DATABASE_URL to run the database benchmarks on PostgreSQL; REDIS_URL (or
// TEST_REDIS_URL) for the Redis store; BENCH_QUICK=1 for smaller, faster runs.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.env.BENCH_QUICK === '1';
const redisUrl = process.env.REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const benches: { file: string; args: string[] }[] = [
  { file: 'hot-path.ts', args: [] },
  { file: 'pagination.ts', args: [quick ? '50000' : '200000'] },
  { file: 'rate-limit.ts', args: [redisUrl] },
  { file: 'import.ts', args: [quick ? '10000' : '100000'] },
];

let failed = 0;
for (const { file, args } of benches) {
  console.log(`\n=== ${file} ${args.join(' ')}`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, file), ...args], {
    stdio: 'inherit',
    timeout: 15 * 60_000,
  });
  if (result.status !== 0) {
    failed += 1;
    console.log(`(${file} exited with ${result.status ?? result.signal})`);
  }
}
process.exit(failed ? 1 : 0);
