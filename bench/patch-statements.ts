// `BENCH_PART=patch-statements npm run bench`: where PostgreSQL's time goes in a PATCH of a customer. pgbench
// (`-M prepared`, pipelined like the driver) runs the bare server's lone UPDATE and Balcão's transaction, then that
// transaction with one part taken away at a time, on a copy of the benchmark's dataset, alternating the variants.
// Each variant's rate against the lone UPDATE's says what the part costs the database; the Node side is not here.
// The statements are written out as Balcão sends them for `{"notes": …}` (change-statement.ts, write-origin.ts,
// request-log.ts, postgres-dialect.ts): a diagnosis, not a contract test.
// Env: BENCH_CUSTOMERS (50000), BENCH_SECONDS (6) per run, BENCH_PAIRS (2) rounds, BENCH_CLIENTS (8).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { benchPostgres } from './bench-postgres.ts';
import { ensureDataset } from './dataset.ts';

const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 50_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 2);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const COPY = 'balcao_bench_patch_statements';

/** The statements of each variant; a variant of more than one is sent as one pipeline, as the driver sends them. */
function variants(team: string, key: string): Record<string, string[]> {
  const row = '(select id from bench_patch_ids where n = :r)';
  const update = `update "customers" set "notes" = 'n' || :r, "updated_at" = greatest(now(), "customers"."updated_at" + interval '1 microsecond') where "team_id" = '${team}' and "mode" = 'live' and "id" = ${row} returning *, to_char("updated_at" at time zone 'UTC', 'YYYYMMDDHH24MISSUS') as "__version"`;
  const mark = `"origin" AS (SELECT balcao_mark_origin('{"key_id":"${key}","request_id":"' || gen_random_uuid() || '"}') AS mark)`;
  const log = `"beside_0" AS (INSERT INTO request_log (team_id, mode, id, api_key_id, request_id, method, path, status, idempotency_key, resource, resource_id) VALUES ('${team}', 'live', gen_random_uuid(), '${key}', gen_random_uuid()::text, 'PATCH', '/v1/customers/' || ${row}, 200, NULL, 'customers', ${row}))`;
  // The same row into a copy of the table without its foreign key to accounts (LIKE copies no foreign key): what
  // the key's check costs, a SELECT … FOR KEY SHARE of the account's row by every write.
  const unchecked = log.replace('INSERT INTO request_log ', 'INSERT INTO request_log_unchecked ');
  const change = (tail: string[]) => {
    const counted = tail.some((cte) => cte.startsWith('"origin"')) ? ', (SELECT count(*) FROM origin) as "recorded"' : '';
    return `WITH "changed" AS (${update})${tail.map((cte) => `, ${cte}`).join('')} SELECT changed.*${counted}, 1 / (SELECT count(*) FROM changed) as "changed_count" FROM (SELECT 1) AS proof LEFT JOIN changed ON true;`;
  };
  const position = 'select pg_current_wal_insert_lsn()::text as lsn;';
  return {
    'lone UPDATE (the bare server)': [
      `update customers set notes = 'n' || :r, updated_at = now() where team_id = '${team}' and mode = 'live' and id = ${row} returning *;`,
    ],
    "Balcão's transaction": ['begin;', 'set local plan_cache_mode = force_generic_plan;', change([mark, log]), 'commit;', position],
    'without BEGIN and COMMIT': [change([mark, log]), position],
    'without BEGIN, COMMIT and the write-log row': [change([mark]), position],
    'without BEGIN, COMMIT and the origin mark': [change([log]), position],
    "Balcão's transaction, the write-log row unchecked": [
      'begin;',
      'set local plan_cache_mode = force_generic_plan;',
      change([mark, unchecked]),
      'commit;',
      position,
    ],
    'the change statement alone': [change([])],
  };
}

function script(statements: string[]): string {
  const body = statements.length === 1 ? statements : ['\\startpipeline', ...statements, '\\endpipeline'];
  return ['\\set r random(0, 999)', ...body, ''].join('\n');
}

async function pgbench(url: string, file: string): Promise<number> {
  const u = new URL(url);
  const args = ['-h', u.hostname, '-p', u.port, '-U', u.username, '-n', '-M', 'prepared', '-c', String(CLIENTS), '-j', '2'];
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      path.join(PG_BIN, 'pgbench'),
      [...args, '-T', String(SECONDS), '-f', file, COPY],
      { timeout: (SECONDS + 60) * 1000 },
      (error, stdout, stderr) => (error ? reject(new Error(`pgbench failed: ${stderr || error.message}`)) : resolve(stdout)),
    ),
  );
  const tps = /tps = ([\d.]+)/.exec(out)?.[1];
  if (!tps) throw new Error(`pgbench printed no rate: ${out}`);
  return Number(tps);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const { pg, dir } = await benchPostgres(CUSTOMERS);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-patch-statements-'));
try {
  const data = await ensureDataset(pg.url, dir, CUSTOMERS);
  const admin = postgres(pg.url.replace(/\/[^/]*$/, '/template1'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${COPY} WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE ${COPY} TEMPLATE ${new URL(pg.url).pathname.slice(1)}`);
  const copy = postgres(pg.url.replace(/\/[^/]*$/, `/${COPY}`), { max: 1, onnotice: () => {} });
  await copy.unsafe(
    `CREATE TABLE bench_patch_ids AS SELECT (row_number() OVER ()) - 1 AS n, id FROM customers WHERE team_id = $1 AND mode = 'live' LIMIT 1000`,
    [data.accountId],
  );
  await copy.unsafe('CREATE UNIQUE INDEX ON bench_patch_ids (n)');
  await copy.unsafe('CREATE TABLE request_log_unchecked (LIKE request_log INCLUDING ALL)');
  const [key] = await copy.unsafe('SELECT id FROM api_keys WHERE account_id = $1 LIMIT 1', [data.accountId]);
  await copy.end();
  const runs = Object.entries(variants(data.accountId, String(key?.id))).map(([name, statements], i) => {
    const file = path.join(work, `variant-${i}.sql`);
    fs.writeFileSync(file, script(statements));
    return { name, file, rates: [] as number[] };
  });
  console.log(`PATCH statements: ${CLIENTS} pgbench clients, ${PAIRS} rounds of ${SECONDS} s per variant, ${CUSTOMERS} customers`);
  for (let round = 0; round < PAIRS; round++) {
    const order = round % 2 === 0 ? runs : [...runs].reverse();
    for (const run of order) run.rates.push(await pgbench(pg.url, run.file));
  }
  const lone = median(runs[0]!.rates);
  for (const run of runs) {
    const rate = median(run.rates);
    console.log(
      `  ${run.name.padEnd(48)} ${rate.toFixed(0).padStart(7)}/s  ${(rate / lone).toFixed(2)}× the lone UPDATE  ${((CLIENTS * 1000) / rate).toFixed(3)} ms each, ${CLIENTS} at once;  rounds ${run.rates.map((r) => r.toFixed(0)).join(', ')}`,
    );
  }
  await admin.unsafe(`DROP DATABASE IF EXISTS ${COPY} WITH (FORCE)`);
  await admin.end();
} finally {
  fs.rmSync(work, { recursive: true, force: true });
  pg.stop();
}
