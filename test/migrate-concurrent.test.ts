// Migrations run by one process at a time (docs/migrations.md). On PostgreSQL several
// `balcao migrate` (or `serve`, which migrates first) started together take an advisory lock: one applies the
// migrations, the others wait for it, then find nothing to do. On the embedded database a second process is
// refused at once (one process per data folder), and the schema is whole either way.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, describe, it } from 'node:test';
import postgres from 'postgres';
import { balcao, type ScratchEnv, scratchEnv } from './helpers/cli.ts';

// Every migration file of the release, in order.
const MIGRATIONS = fs
  .readdirSync(new URL('../migrations/', import.meta.url))
  .filter((f) => f.endsWith('.sql'))
  .sort();
/** The key migrate.ts locks (pg_advisory_xact_lock). */
const LOCK_ID = 4_242_001;

const scratches: ScratchEnv[] = [];
after(async () => {
  for (const s of scratches) await s.cleanup();
});

describe('balcao migrate, several at once', () => {
  it('four processes started together: the migrations are applied once, every process ends well', async () => {
    const scratch = await scratchEnv();
    scratches.push(scratch);
    const runs = await Promise.all(Array.from({ length: 4 }, () => balcao(['migrate', '--json'], scratch.env)));
    if (scratch.env.DATABASE_URL) {
      assert.deepEqual(
        runs.map((r) => r.code),
        [0, 0, 0, 0],
        runs.map((r) => r.stderr).join(''),
      );
      const applied = runs.map((r) => JSON.parse(r.stdout).applied as string[]);
      assert.deepEqual(
        applied.filter((a) => a.length > 0),
        [MIGRATIONS],
        'one process applied them all',
      );
    } else {
      // One process per data folder: the others are refused with the holder's name, nothing is damaged.
      for (const r of runs.filter((r) => r.code !== 0)) assert.match(r.stderr, /in use|could not lock/);
      assert.ok(runs.some((r) => r.code === 0));
    }
    const again = await balcao(['migrate', '--json'], scratch.env);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout).applied, []);
  });

  it('on PostgreSQL a migrate waits while another holds the migration lock, then applies', async () => {
    const scratch = await scratchEnv();
    scratches.push(scratch);
    if (!scratch.env.DATABASE_URL) return; // the advisory lock is PostgreSQL's; the embedded case is above
    const holder = postgres(scratch.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    const waiter = postgres(scratch.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      const release = await holder.reserve();
      await release`SELECT pg_advisory_lock(${LOCK_ID})`;
      const running = balcao(['migrate', '--json'], scratch.env);
      // Signal, not sleep: the process is waiting once PostgreSQL shows its lock request not granted.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const [row] =
          await waiter`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${LOCK_ID} AND NOT granted`;
        if (row!.n > 0) break;
        if (Date.now() > deadline) assert.fail('balcao migrate never waited for the lock');
        await new Promise((r) => setTimeout(r, 20));
      }
      const [applied] = await waiter`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`;
      assert.equal(applied!.present, false, 'nothing applied while the lock is held');
      await release`SELECT pg_advisory_unlock(${LOCK_ID})`;
      release.release();
      const result = await running;
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout).applied, MIGRATIONS);
    } finally {
      await holder.end();
      await waiter.end();
    }
  });
});
