// Tenancy of every statement: each operation of the served API is called over HTTP while the
// statements the app sends are captured (compiled as the drivers receive them, the way the
// snapshot tests compile plans); each one that touches an account-owned table (a table with
// team_id and mode) must carry both columns with the caller's values: as a predicate when it
// reads, updates or locks, as inserted values when it inserts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { exportAccount } from '../src/export/export-account.ts';
import { EXAMPLE_IDS } from '../src/openapi/field-examples.ts';
import { type BulkSession, inBulkTransaction } from '../src/import/bulk-session.ts';
import { importObjectInSession, loadImportSpecs } from '../src/import/stream-import.ts';
import { RESOURCES } from '../src/resources/registry.ts';
import { listEndpoints } from '../src/webhooks/endpoint-repository.ts';
import { byTableName, type TestServer, startTestServer } from './helpers/harness.ts';
import { insertRow, UNLIMITED } from './helpers/read-data.ts';
import { StatementRecorder } from './helpers/statement-recorder.ts';

type Json = Record<string, any>;
const recorder = new StatementRecorder();
let s: TestServer;

before(async () => {
  s = await startTestServer({ plugin: recorder });
});
after(async () => {
  await s?.close();
});

/** The values of one `(…), (…)` list, split at top-level commas; it ends where its CTE's parenthesis closes. */
function tuples(text: string): string[][] {
  const out: string[][] = [];
  let depth = 0;
  let current: string[] = [];
  let token = '';
  for (const ch of text) {
    if (ch === '(') {
      depth += 1;
      if (depth === 1) continue;
    } else if (ch === ')') {
      depth -= 1;
      if (depth < 0) break; // the end of the common table expression holding the list
      if (depth === 0) {
        current.push(token.trim());
        out.push(current);
        current = [];
        token = '';
        continue;
      }
    } else if (ch === ',' && depth === 1) {
      current.push(token.trim());
      token = '';
      continue;
    }
    if (depth >= 1) token += ch;
  }
  return out;
}

const param = (parameters: readonly unknown[], placeholder: string | undefined) =>
  placeholder && /^\$\d+$/.test(placeholder) ? parameters[Number(placeholder.slice(1)) - 1] : Symbol('not a parameter');

/** What is wrong with one statement's tenancy, or null. */
function tenancyFault(
  sql: string,
  parameters: readonly unknown[],
  owned: ReadonlySet<string>,
  accountId: string,
  mode: string,
): string | null {
  const tables = [...sql.matchAll(/\b(?:from|into|update|join)\s+"([a-z_]+)"/g)].map((m) => m[1]!).filter((t) => owned.has(t));
  if (tables.length === 0) return null;
  // An insert (the statement, or one of its common table expressions: a sale's statement writes its items
  // and history beside it) carries the tenant in its values; every other account-owned table it names
  // (sub-selects, an update beside it) in a predicate. An INSERT … SELECT of one row names the tenant as
  // selected parameters (`cast($1 as uuid) as "team_id"`).
  const clause = (from: number) => sql.slice(from).split(/ on conflict | returning /)[0]!;
  let inserts = 0;
  for (const insert of sql.matchAll(/insert into "([a-z_]+)" \(([^)]*)\) (values|select) /g)) {
    inserts += 1;
    const text = clause(insert.index! + insert[0].length);
    if (insert[3] === 'values') {
      const columns = insert[2]!.split(',').map((c) => c.trim().replaceAll('"', ''));
      const [team, modeAt] = [columns.indexOf('team_id'), columns.indexOf('mode')];
      if (team < 0 || modeAt < 0) return 'an insert without team_id and mode';
      for (const row of tuples(text)) {
        if (param(parameters, row[team]) !== accountId || param(parameters, row[modeAt]) !== mode)
          return 'an inserted row of another tenant';
      }
    } else {
      const selected = (column: string) => new RegExp(`(\\$\\d+)(?: as [a-z]+\\))? as "${column}"`).exec(text)?.[1];
      const [team, m] = [selected('team_id'), selected('mode')];
      if (!team || !m) return 'an insert without team_id and mode';
      if (param(parameters, team) !== accountId || param(parameters, m) !== mode) return 'an inserted row of another tenant';
    }
  }
  const predicated = tables.length - inserts;
  const predicates = [...sql.matchAll(/"team_id" = (\$\d+) and "mode" = (\$\d+)/g)];
  if (predicates.length < predicated) return `${predicated} account-owned tables, ${predicates.length} tenant predicates`;
  for (const [, team, m] of predicates) {
    if (param(parameters, team) !== accountId || param(parameters, m) !== mode) return 'a predicate naming another tenant';
  }
  return null;
}

/** Account-owned tables: those with both tenant columns. */
async function ownedTables(): Promise<Set<string>> {
  const rows = await byTableName(s.db)
    .selectFrom('information_schema.columns')
    .select('table_name')
    .where('table_schema', '=', 'public')
    .where('column_name', 'in', ['team_id', 'mode'])
    .groupBy('table_name')
    .having((eb) => eb.fn.count('column_name'), '=', 2)
    .execute();
  return new Set(rows.map((r) => String(r.table_name)));
}

/** What the bulk import's session sends: raw statements and COPYs, as the driver receives them. */
interface SessionRecord {
  queries: { text: string; params: readonly unknown[] }[];
  copies: { table: string; columns: readonly string[]; lines: string[] }[];
}

function recordingSession(session: BulkSession, record: SessionRecord): BulkSession {
  return {
    query: (text, params = []) => {
      record.queries.push({ text, params });
      return session.query(text, params);
    },
    openCopy: (table, columns) => {
      const copy = session.openCopy(table, columns);
      const recorded = { table, columns, lines: [] as string[] };
      record.copies.push(recorded);
      return {
        write: (rows) => {
          for (const line of rows.toString('utf8').split('\n')) if (line !== '') recorded.lines.push(line);
          return copy.write(rows);
        },
        end: () => copy.end(),
      };
    },
  };
}

/**
 * What is wrong with the tenancy of one raw statement of the bulk import, or null. Maintenance
 * (ANALYZE) and the staging tables' own statements name no tenant; an INSERT … SELECT from a
 * staging table copies rows whose tenant columns their COPY wrote (checked there); the one
 * unscoped read is the global id check (ids are primary keys across accounts).
 */
function rawTenancyFault(
  text: string,
  params: readonly unknown[],
  owned: ReadonlySet<string>,
  accountId: string,
  mode: string,
): string | null {
  const sql = text.replace(/\s+/g, ' ');
  if (/^(ANALYZE|CREATE TEMP TABLE|DROP TABLE) /.test(sql)) return null;
  const named = [...sql.matchAll(/\b(?:FROM|INTO|JOIN|UPDATE)\s+"?([a-z_]+)"?/gi)].map((m) => m[1]!).filter((t) => owned.has(t));
  if (named.length === 0) return null;
  const insert = /^INSERT INTO "?([a-z_]+)"? \(([^)]*)\) (VALUES \(([^)]*)\)|SELECT .* FROM (import_[a-z_]+))/.exec(sql);
  if (insert) {
    const columns = insert[2]!.split(',').map((c) => c.trim().replaceAll('"', ''));
    if (columns[0] !== 'team_id' && !columns.includes('team_id')) return 'an insert without team_id';
    if (!columns.includes('mode')) return 'an insert without mode';
    if (insert[5]) return null;
    const values = insert[4]!.split(',').map((v) => v.trim().replace(/::[a-z]+$/, ''));
    const at = (column: string) => param(params, values[columns.indexOf(column)]);
    return at('team_id') === accountId && at('mode') === mode ? null : 'an inserted row of another tenant';
  }
  // The import's "is this id taken" check spans both modes of the account: ids are unique per account
  // (the key is (team_id, id)), so it names the account alone.
  const idTaken = /LEFT JOIN "?[a-z_]+"? t ON t\.team_id = (\$\d+)::uuid AND t\.id = s\.id/.exec(sql);
  if (idTaken && named.length === 1) return param(params, idTaken[1]) === accountId ? null : 'an id check in another account';
  const conditions = [...sql.matchAll(/([a-z]+)\.team_id = (\$\d+)::uuid AND \1\.mode = (\$\d+)/g)];
  if (conditions.length < named.length) return `${named.length} account-owned tables, ${conditions.length} tenant conditions`;
  for (const [, , team, m] of conditions) {
    if (param(params, team) !== accountId || param(params, m) !== mode) return 'a condition naming another tenant';
  }
  return null;
}

const operationsOf = (doc: Json) =>
  Object.entries<Json>(doc.paths)
    .filter(([path]) => path.startsWith('/v1/') && path !== '/v1/openapi.json')
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));

describe('tenancy of every statement the engines send', () => {
  test('every operation: each statement on an account-owned table carries (team_id, mode) of the caller', async () => {
    const owned = new Set(
      (
        await byTableName(s.db)
          .selectFrom('information_schema.columns')
          .select('table_name')
          .where('table_schema', '=', 'public')
          .where('column_name', 'in', ['team_id', 'mode'])
          .groupBy('table_name')
          .having((eb) => eb.fn.count('column_name'), '=', 2)
          .execute()
      ).map((r) => String(r.table_name)),
    );
    assert.ok(owned.has('customers') && owned.has('tenant_counters'), [...owned].join(','));

    const other = await s.createAccountWithKey(UNLIMITED);
    const { account } = await s.createAccountWithKey(UNLIMITED);
    // A test-mode key: a hard-coded 'live' anywhere would show.
    const { key, id: keyId } = await s.createKey(account.id, { test: true });
    const tenant = { accountId: account.id, mode: 'test' as const };
    const doc = JSON.parse(s.app.openapiJson()) as Json;
    const ids = new Map<string, string>();
    for (const d of RESOURCES) {
      for (const owner of [tenant, tenant, { accountId: other.account.id, mode: 'live' as const }]) {
        const row = await insertRow(s.db, d.table, owner);
        if (owner === tenant) ids.set(`/v1/${d.name}`, String(row.id));
      }
    }

    const called = new Set<string>();
    const call = async (method: string, template: string, path: string, body?: unknown) => {
      const res = await s.request(method, path, { key, body });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      called.add(`${method} ${template}`);
      return res;
    };
    const example = (ref: Json) => {
      const target = ref.$ref ? doc.components.requestBodies[ref.$ref.split('/').pop()] : ref;
      // The usual example where there is one: the complete one refers to records this test does not make.
      const { usual, complete } = target.content['application/json'].examples;
      // An example naming an API key (an endpoint's excluded_key_ids) names this test's own.
      return JSON.parse(JSON.stringify((usual ?? complete).value), (_k, v) => (v === EXAMPLE_IDS.apiKey ? keyId : v));
    };

    recorder.on = true;
    try {
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        if (!path.startsWith('/v1/') || path === '/v1/openapi.json' || path.includes('{')) continue;
        const d = RESOURCES.find((r) => `/v1/${r.name}` === path);
        if (item.get && d) {
          // Every sort, and its second page: a cursor over a nullable column compiles to two segments.
          for (const sort of d.sorts.flatMap((f) => [f, `-${f}`])) {
            const first = await call('GET', path, `${path}?limit=1&sort=${sort}`);
            const cursor = first.body.pagination.next_cursor;
            if (cursor) await call('GET', path, `${path}?limit=1&sort=${sort}&cursor=${encodeURIComponent(cursor)}`);
          }
        } else if (item.get) {
          // A list with no descriptor (the event feed): its first item addresses `{id}`.
          const listed = await call('GET', path, path);
          const first = listed.body.data?.[0]?.id;
          if (typeof first === 'string') ids.set(path, first);
        }
        if (item.post) {
          const created = await call('POST', path, path, example(item.post.requestBody));
          ids.set(path, created.body.data.id);
        }
        const byId = doc.paths[`${path}/{id}`] as Json | undefined;
        if (!byId) continue;
        const id = ids.get(path);
        assert.ok(id, `no record to address ${path}/{id} with`);
        const include = Object.keys(d?.includes ?? {}).join(',');
        if (byId.get) await call('GET', `${path}/{id}`, `${path}/${id}${include ? `?include=${include}` : ''}`);
        if (byId.patch) await call('PATCH', `${path}/{id}`, `${path}/${id}`, example(byId.patch.requestBody));
        // Operations under the record (`/{id}/rotate-secret`, `/{id}/deliveries`), before it is deleted.
        // Those with an id of their own (`/{id}/deliveries/{delivery_id}/retry`) last: the ones before make it.
        const subs = Object.entries<Json>(doc.paths)
          .filter(([sub]) => sub.startsWith(`${path}/{id}/`))
          .sort(([a], [b]) => a.split('{').length - b.split('{').length);
        for (const [sub, subItem] of subs) {
          let concrete = sub.replace('{id}', id);
          if (concrete.includes('{delivery_id}')) {
            const delivery = await s.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id).executeTakeFirst();
            assert.ok(delivery, `no delivery to address ${sub} with`);
            concrete = concrete.replace('{delivery_id}', delivery.id);
          }
          if (subItem.get) await call('GET', sub, concrete);
          if (subItem.post) await call('POST', sub, concrete, subItem.post.requestBody ? example(subItem.post.requestBody) : undefined);
        }
        if (byId.delete) await call('DELETE', `${path}/{id}`, `${path}/${id}`);
      }
      // Upserts by external id, with the resource's POST example: once to create, once more to find it.
      for (const [template, item] of Object.entries<Json>(doc.paths)) {
        if (!item.put) continue;
        const post = (doc.paths[template.replace(/\/by-external-id\/\{external_id\}$/, '')] as Json | undefined)?.post;
        assert.ok(post, `no POST beside ${template}`);
        const { external_id: _ignored, ...body } = example(post.requestBody) as Json;
        const concrete = template.replace('{external_id}', 'tenancy-upsert');
        await call('PUT', template, concrete, body);
        await call('PUT', template, concrete, body);
      }
    } finally {
      recorder.on = false;
    }

    assert.deepEqual([...called].sort(), operationsOf(doc).sort(), 'every operation of the API was called');
    const statements = recorder.statements();
    const scoped = statements.filter((c) => [...owned].some((t) => c.sql.includes(`"${t}"`)));
    assert.ok(scoped.length > 50, `only ${scoped.length} statements on account-owned tables`);
    for (const c of statements) {
      const fault = tenancyFault(c.sql, c.parameters, owned, tenant.accountId, tenant.mode);
      assert.equal(fault, null, `${fault}: ${c.sql} ${JSON.stringify(c.parameters)}`);
    }
  });

  test('the checker itself refuses a statement without the tenant, with a foreign one, or an insert without it', () => {
    const owned = new Set(['customers']);
    assert.equal(
      tenancyFault('select "id" from "customers" where "id" = $1', ['x'], owned, 't', 'live'),
      '1 account-owned tables, 0 tenant predicates',
    );
    assert.equal(
      tenancyFault('select "id" from "customers" where "team_id" = $1 and "mode" = $2', ['u', 'live'], owned, 't', 'live'),
      'a predicate naming another tenant',
    );
    assert.equal(
      tenancyFault('insert into "customers" ("full_name") values ($1)', ['a'], owned, 't', 'live'),
      'an insert without team_id and mode',
    );
    assert.equal(
      tenancyFault(
        'insert into "customers" ("full_name", "team_id", "mode") values ($1, $2, $3), ($4, $5, $6)',
        ['a', 't', 'live', 'b', 'u', 'live'],
        owned,
        't',
        'live',
      ),
      'an inserted row of another tenant',
    );
    // An insert inside a common table expression: its values carry the tenant, the update beside it must too.
    assert.equal(
      tenancyFault(
        'with "n" as (insert into "customers" ("team_id", "mode") values ($1, $2) returning "id") update "customers" set "notes" = $3 from "n" where "customers"."id" = $4',
        ['t', 'live', 'x', 'i'],
        owned,
        't',
        'live',
      ),
      '1 account-owned tables, 0 tenant predicates',
    );
    // An INSERT … SELECT of one row: its selected parameters name the tenant.
    const insertSelect =
      'insert into "customers" ("team_id", "mode", "full_name") select cast($1 as uuid) as "team_id", cast($2 as text) as "mode", $3 as "full_name"';
    assert.equal(tenancyFault(insertSelect, ['t', 'live', 'a'], owned, 't', 'live'), null);
    assert.equal(tenancyFault(insertSelect, ['u', 'live', 'a'], owned, 't', 'live'), 'an inserted row of another tenant');
    assert.equal(
      tenancyFault(insertSelect.replace('as "mode"', 'as "m"'), ['t', 'live', 'a'], owned, 't', 'live'),
      'an insert without team_id and mode',
    );
    assert.equal(tenancyFault('select 1 from "api_keys" where "id" = $1', ['k'], owned, 't', 'live'), null);
  });

  test("the CLI paths: import (raw SQL and COPY), export and webhooks list carry the caller's account and mode", async () => {
    const owned = await ownedTables();
    const other = await s.createAccountWithKey(UNLIMITED);
    const { account } = await s.createAccountWithKey(UNLIMITED);
    const tenant = { accountId: account.id, mode: 'test' as const };
    for (const owner of [
      tenant,
      { accountId: other.account.id, mode: 'live' as const },
      { accountId: account.id, mode: 'live' as const },
    ]) {
      await s.db
        .insertInto('webhook_endpoints')
        .values({ team_id: owner.accountId, mode: owner.mode, url: 'https://example.com/hook', enabled_events: ['*'], secret: 'whsec_x' })
        .execute();
    }

    // Import: nested children, a sale's children given on their own (staged), the sale counter.
    const sale = randomUUID();
    const item = { catalog_type: 'product', catalog_item_id: randomUUID(), quantity: 1, unit_price: 2, subtotal: 2, total_amount: 2 };
    const file = {
      customers: [{ full_name: 'Ana' }],
      sales: [{ id: sale, transaction_number: '41', total_amount: 2, items: [item], status_history: [{ new_status: 'paid' }] }],
      sale_items: [{ ...item, sale_id: sale }],
    };
    const record: SessionRecord = { queries: [], copies: [] };
    const specs = await loadImportSpecs(s.database);
    await inBulkTransaction(s.database.driver, (session) =>
      importObjectInSession(recordingSession(session, record), specs, file, { accountId: tenant.accountId, mode: tenant.mode }),
    );
    assert.ok(record.copies.length >= 4 && record.queries.length >= 3, JSON.stringify(record.queries.map((q) => q.text)));
    for (const copy of record.copies) {
      if (!owned.has(copy.table) && !copy.table.startsWith('import_')) continue;
      assert.deepEqual(copy.columns.slice(0, 2), ['team_id', 'mode'], copy.table);
      for (const line of copy.lines) assert.ok(line.startsWith(`${tenant.accountId}\t${tenant.mode}\t`), `${copy.table}: ${line}`);
    }
    for (const { text, params } of record.queries) {
      const fault = rawTenancyFault(text, params, owned, tenant.accountId, tenant.mode);
      assert.equal(fault, null, `${fault}: ${text} ${JSON.stringify(params)}`);
    }

    // Export and `balcao webhooks list`: through the query builder, recorded by the plugin.
    const out = mkdtempSync(path.join(tmpdir(), 'balcao-tenancy-'));
    recorder.nodes.length = 0;
    recorder.on = true;
    try {
      const exported = await exportAccount(s.db, {
        accountId: tenant.accountId,
        mode: tenant.mode,
        format: 'ndjson',
        out,
        includeInternal: true,
      });
      assert.equal(exported.counts.sales, 1);
      assert.equal((await listEndpoints(s.db, tenant)).length, 1);
    } finally {
      recorder.on = false;
      rmSync(out, { recursive: true, force: true });
    }
    const statements = recorder.statements();
    assert.ok(statements.filter((c) => [...owned].some((t) => c.sql.includes(`"${t}"`))).length > 10);
    for (const c of statements) {
      const fault = tenancyFault(c.sql, c.parameters, owned, tenant.accountId, tenant.mode);
      assert.equal(fault, null, `${fault}: ${c.sql} ${JSON.stringify(c.parameters)}`);
    }
  });

  test('the raw checker refuses an import statement or COPY without the tenant', () => {
    const owned = new Set(['transactions', 'tenant_counters']);
    assert.equal(
      rawTenancyFault('SELECT 1 FROM transactions p WHERE p.id = $1', ['x'], owned, 't', 'live'),
      '1 account-owned tables, 0 tenant conditions',
    );
    assert.equal(
      rawTenancyFault('SELECT 1 FROM transactions p WHERE p.team_id = $1::uuid AND p.mode = $2', ['u', 'live'], owned, 't', 'live'),
      'a condition naming another tenant',
    );
    assert.equal(
      rawTenancyFault('INSERT INTO tenant_counters (name, value) VALUES ($1, $2)', ['a', 1], owned, 't', 'live'),
      'an insert without team_id',
    );
    assert.equal(
      rawTenancyFault(
        'INSERT INTO tenant_counters (team_id, mode, name) VALUES ($1::uuid, $2, $3)',
        ['u', 'live', 'n'],
        owned,
        't',
        'live',
      ),
      'an inserted row of another tenant',
    );
  });
});
