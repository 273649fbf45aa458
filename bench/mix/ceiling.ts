// PostgreSQL's own ceiling for the mix: the statements of each operation replayed by `pgbench -M prepared`
// with the same client count, one script per operation weighted by its share of the mix. The account of each
// transaction is drawn with random_zipfian (s = 1.001, the nearest pgbench allows to the dataset's 1/rank law)
// and its row uniformly, the ids spelled by the same expressions as the load's. A transaction is one request's
// statements; /v1/me reads the account row.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ACCOUNT_PREFIX, ACCOUNTS, CUSTOMER_PREFIX, SALE_PREFIX, sqlId } from './mix-data.ts';
import { MIX, type OpName } from './mix-traffic.ts';

const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';

const TEAM = sqlId(ACCOUNT_PREFIX, ':rank', '0');
const CUSTOMER = sqlId(CUSTOMER_PREFIX, ':rank', 'cast(:i as bigint)');
const SALE = sqlId(SALE_PREFIX, ':rank', 'cast(:i as bigint)');
const C_COLS = `"id", "full_name", "email", "phone", "document", "birth_date", "notes", "is_active", "gender", "address_country", "address_state", "address_city", "address_neighborhood", "address_street", "address_number", "address_complement", "address_zip_code", "accepts_communications", "valid_whatsapp", "profile_photo_url", "whatsapp_photo", "created_at", "updated_at"`;
const S_COLS = `"id", "customer_id", "transaction_type", "transaction_number", "status", "sale_date", "delivery_date", "subtotal", "discount_amount", "discount_percentage", "tax_amount", "total_amount", "notes", "payment_method", "payment_status", "delivery_fee", "order_code", "is_active", "created_at", "updated_at"`;
// pgbench takes every `:word` for a variable, even in a literal: the same to_char work with no colon in its format.
const CURSOR = `to_char("created_at" at time zone 'UTC', 'YYYY-MM-DD"T"HH24"h"MI"m"SS.US"Z"') as "__cursor_value"`;
const VERSION = `to_char("updated_at" at time zone 'UTC', 'YYYYMMDDHH24MISSUS') as "__version"`;
const NEWEST = `order by "created_at" desc, "id" desc limit 21`;
const CUSTOMERS = `select ${C_COLS}, ${CURSOR} from "customers" where "team_id" = ${TEAM} and "mode" = 'live'`;
const SALES = `select ${S_COLS}, ${CURSOR} from "transactions" where "team_id" = ${TEAM} and "mode" = 'live' and "transaction_type" in ('sale', 'order')`;
const GET_SALE = `select ${S_COLS}, ${VERSION} from "transactions" where "team_id" = ${TEAM} and "mode" = 'live' and "transaction_type" in ('sale', 'order') and "id" = ${SALE};`;
const CHILDREN = (table: string, columns: string) =>
  `select ${columns} from "${table}" where "team_id" = ${TEAM} and "mode" = 'live' and "transaction_id" = ${SALE} order by "created_at" asc, "id" asc;`;
const ITEMS = CHILDREN(
  'transaction_items',
  `"id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "discount_amount", "discount_percentage", "subtotal", "total_amount", "notes", "created_at"`,
);
const HISTORY = CHILDREN('transaction_status_history', `"id", "old_status", "new_status", "change_reason", "created_at"`);

/** The statements of each operation (one line each; pgbench runs them in order as one transaction). */
export const STATEMENTS: Record<OpName, string[]> = {
  'list customers, first page': [`${CUSTOMERS} ${NEWEST};`],
  'list customers, cursor': [
    `${CUSTOMERS} and ("created_at", "id") < ((select timestamptz '2020-01-01 00:00:00+00' + cast(:i as integer) * interval '1 minute'), (select ${CUSTOMER})) ${NEWEST};`,
  ],
  'list customers, full_name ilike': [`${CUSTOMERS} and "full_name" ilike 'Ana%' ${NEWEST};`],
  'list customers, sort=full_name': [
    `select ${C_COLS} from "customers" where "team_id" = ${TEAM} and "mode" = 'live' order by "full_name" asc, "id" asc limit 21;`,
  ],
  'list customers, is_active=false': [`${CUSTOMERS} and "is_active" = false ${NEWEST};`],
  'list sales, first page': [`${SALES} ${NEWEST};`],
  'list sales, status=pending': [`${SALES} and "status" = 'pending' ${NEWEST};`],
  'get customer': [`select ${C_COLS}, ${VERSION} from "customers" where "team_id" = ${TEAM} and "mode" = 'live' and "id" = ${CUSTOMER};`],
  'get customer, If-None-Match': [
    `select ${C_COLS}, ${VERSION} from "customers" where "team_id" = ${TEAM} and "mode" = 'live' and "id" = ${CUSTOMER};`,
  ],
  'get sale with items, history': [GET_SALE, ITEMS, HISTORY],
  'get sale, If-None-Match': [GET_SALE],
  'create customer': [
    `insert into "customers" ("full_name", "email", "team_id", "mode") values ('Mix ' || cast(:client_id as text), 'mix@example.com.br', ${TEAM}, 'live') returning ${C_COLS};`,
  ],
  'create sale': [
    'BEGIN;',
    `insert into "transactions" ("transaction_type", "status", "sale_date", "subtotal", "discount_amount", "total_amount", "is_active", "team_id", "mode") values ('sale', 'pending', now(), 75, 0, 75, true, ${TEAM}, 'live') returning "id" as sale_id \\gset`,
    `insert into "transaction_items" ("id", "team_id", "mode", "transaction_id", "catalog_type", "catalog_item_id", "quantity", "unit_price", "subtotal", "total_amount", "created_at") select gen_random_uuid(), ${TEAM}, 'live', cast(:sale_id as uuid), 'product', ${sqlId(CUSTOMER_PREFIX, '0', 'k')}, 1, 25, 25, 25, now() + k * interval '1 microsecond' from generate_series(1, 3) as k;`,
    `insert into "transaction_status_history" ("team_id", "mode", "transaction_id", "old_status", "new_status") values (${TEAM}, 'live', cast(:sale_id as uuid), null, 'pending');`,
    'END;',
  ],
  'patch customer': [
    `update "customers" set "notes" = 'n' || cast(:client_id as text) || '-' || cast(:i as text), "updated_at" = now() where "team_id" = ${TEAM} and "mode" = 'live' and "id" = ${CUSTOMER} returning ${C_COLS};`,
  ],
  'patch sale status': [
    'BEGIN;',
    `select "status" as old_status from "transactions" where "team_id" = ${TEAM} and "mode" = 'live' and "id" = ${SALE} for update \\gset`,
    `update "transactions" set "status" = 's' || cast(:client_id as text), "updated_at" = now() where "team_id" = ${TEAM} and "mode" = 'live' and "id" = ${SALE} returning *;`,
    `insert into "transaction_status_history" ("team_id", "mode", "transaction_id", "old_status", "new_status") values (${TEAM}, 'live', ${SALE}, cast(:old_status as text), 's' || cast(:client_id as text));`,
    'END;',
  ],
  'feed read': [
    `select "id", "type", "resource", "data", "request_id", "origin", "created_at" from "events" where "team_id" = ${TEAM} and "mode" = 'live' and "created_at" > now() - interval '30 days' order by "created_at" desc, "id" desc limit 21;`,
  ],
  'GET /v1/me': [`select "id", "name", "plan_code" from "accounts" where "id" = ${TEAM};`],
};

export interface CeilingResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  errors: number;
}

/** Runs pgbench for `seconds` with `clients` connections; latencies from its per-transaction log. */
export async function pgbenchMix(options: {
  port: number;
  database: string;
  clients: number;
  seconds: number;
  scale: number;
  /** Seconds run before the measured window, in the same pgbench run: the backends it measures are warm. */
  warmupSeconds: number;
  /** Called when the measured window opens (to read CPU counters). */
  onWarm?: () => void;
}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-pgbench-mix-'));
  fs.chmodSync(dir, 0o777);
  try {
    const cap = Math.round(100_000 * options.scale);
    const files: string[] = [];
    for (const [name, share] of Object.entries(MIX) as [OpName, number][]) {
      const rows = name.includes('sale') && !name.startsWith('create') ? 2 : 1;
      const file = path.join(dir, `${name.replace(/\W+/g, '-')}.sql`);
      fs.writeFileSync(
        file,
        `${[
          `\\set rank random_zipfian(1, ${ACCOUNTS}, 1.001)`,
          `\\set i random(1, ${rows} * greatest(20, (${cap} + :rank / 2) / :rank))`,
          ...STATEMENTS[name],
        ].join('\n')}\n`,
      );
      files.push('-f', `${file}@${share}`);
    }
    const args = [
      '-h',
      '127.0.0.1',
      '-p',
      String(options.port),
      '-U',
      'postgres',
      '-n',
      '-M',
      'prepared',
      '-c',
      String(options.clients),
      '-j',
      '2',
      '-T',
      String(options.warmupSeconds + options.seconds),
      '-l',
      '--log-prefix',
      path.join(dir, 'log'),
      ...files,
      options.database,
    ];
    const opened = Date.now() / 1000 + options.warmupSeconds;
    const warm = setTimeout(() => options.onWarm?.(), options.warmupSeconds * 1000);
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(path.join(PG_BIN, 'pgbench'), args, { timeout: (options.seconds + 60) * 1000, cwd: dir }, (error, out, err) =>
        error ? reject(new Error(`pgbench failed: ${err || error.message}`)) : resolve(out + err),
      ),
    );
    clearTimeout(warm);
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0);
    // Log lines: client_id transaction_no time(µs) script_no time_epoch time_us, the time being the transaction's
    // end: the transactions that ended in the measured window are the round's.
    const latencies: number[] = [];
    for (const f of fs.readdirSync(dir).filter((n) => n.startsWith('log'))) {
      for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
        const fields = line.split(' ');
        const us = Number(fields[2]);
        if (line && Number.isFinite(us) && Number(fields[4]) >= opened) latencies.push(us / 1000);
      }
    }
    const processed = latencies.length;
    const tps = processed / options.seconds;
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
    const mean = latencies.reduce((sum, x) => sum + x, 0) / (processed || 1);
    return {
      requests: processed,
      rps: tps,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      meanMs: mean,
      maxMs: latencies.at(-1) ?? 0,
      errors: failed,
    } satisfies CeilingResult;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
