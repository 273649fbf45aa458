// All or nothing survives a kill -9: `balcao import` reads a named pipe, is killed mid-import
// (after thousands of rows went into its transaction), and the database holds none of them and
// still works. On PGlite (the data folder) and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { BIN, balcaoJson, COMMAND_NODE_FLAGS, type ScratchEnv, scratchEnv } from './helpers/cli.ts';

const LINES = 40_000;

describe('balcao import: kill -9 mid-import', () => {
  let scratch: ScratchEnv;
  before(async () => {
    scratch = await scratchEnv();
  });
  after(() => scratch.cleanup());

  const countCustomers = async (accountId: string): Promise<number> => {
    if (scratch.env.DATABASE_URL) {
      const sql = postgres(scratch.env.DATABASE_URL, { max: 1, onnotice: () => {} });
      try {
        return Number((await sql`SELECT count(*)::int AS n FROM customers WHERE team_id = ${accountId}`)[0]?.n);
      } finally {
        await sql.end();
      }
    }
    const database = await openDatabase({ databaseUrl: undefined, dataDir: scratch.env.BALCAO_DATA_DIR as string }, 'kill test');
    try {
      const row = await database.db
        .selectFrom('customers')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('team_id', '=', accountId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    } finally {
      await database.close();
    }
  };

  /** PostgreSQL: the import's transaction is open (it has begun writing). */
  const importTransactionOpen = async (): Promise<boolean> => {
    const sql = postgres(scratch.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
    try {
      const rows =
        await sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`;
      return rows.length > 0;
    } finally {
      await sql.end();
    }
  };

  test('a killed import leaves no rows, and the next import works', async () => {
    const { id: accountId } = await balcaoJson(['accounts', 'create', '--name', 'Kill', '--modules', 'all'], scratch.env);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-kill-'));
    const fifo = path.join(folder, 'customers.ndjson');
    execFileSync('mkfifo', [fifo]);
    const { TEST_DATABASE_URL: _t, DATABASE_URL: _d, ...inherited } = process.env;
    const child = spawn(process.execPath, [...COMMAND_NODE_FLAGS, BIN, 'import', '--account', accountId, fifo, '--json'], {
      env: { ...inherited, ...scratch.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
    try {
      // Writes go through only as fast as the import reads: once these are in, it has read most of them.
      const writer = fs.createWriteStream(fifo);
      writer.on('error', () => {});
      for (let i = 0; i < LINES; i++) {
        const line = `${JSON.stringify({ full_name: `Cliente ${i}`, email: `c${i}@example.com` })}\n`;
        if (!writer.write(line)) await new Promise<void>((resolve) => writer.once('drain', () => resolve()));
      }
      await new Promise<void>((resolve) => writer.write('', () => resolve()));
      if (scratch.env.DATABASE_URL) assert.ok(await importTransactionOpen(), 'the import is inside its transaction');
      child.kill('SIGKILL');
      assert.equal(await exited, 'SIGKILL');
      writer.destroy();
    } finally {
      child.kill('SIGKILL');
      fs.rmSync(folder, { recursive: true, force: true });
    }
    assert.equal(await countCustomers(accountId), 0);

    const file = path.join(scratch.env.BALCAO_DATA_DIR as string, '..', `kill-${process.pid}-after.ndjson`);
    fs.writeFileSync(file, `${JSON.stringify({ resource: 'customers', full_name: 'Depois' })}\n`);
    try {
      const result = await balcaoJson(['import', '--account', accountId, file, '--json'], scratch.env);
      assert.deepEqual(result.counts, { customers: 1 });
    } finally {
      fs.rmSync(file, { force: true });
    }
    assert.equal(await countCustomers(accountId), 1);
  });
});
