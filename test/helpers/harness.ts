// Starts the real app on 127.0.0.1 (random port) over a fresh database: PGlite in memory by
// default, or a throwaway PostgreSQL database when TEST_DATABASE_URL is set (CI runs the
// suite both ways). Exposes helpers to create accounts and keys the way the CLI does.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely, KyselyPlugin } from 'kysely';
import postgres from 'postgres';
import { createAccount, type AccountRow } from '../../src/accounts/account-repository.ts';
import { createKey } from '../../src/accounts/key-repository.ts';
import { type AppDeps, buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { KeyMode } from '../../src/domain/api-keys.ts';
import { MODULES, type ModuleName } from '../../src/domain/modules.ts';
import type { PlanCode, RateLimitOverrides } from '../../src/domain/plans.ts';
import { type Database, type Db, DEFAULT_DB_TIMEOUTS, openDatabase } from '../../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../../src/events/capture/setup.ts';
import type { RateLimiter } from '../../src/http/rate-limit.ts';
import type { ResourceDescriptor } from '../../src/resources/descriptor.ts';
import { Contract } from './contract.ts';
import { distributeCitusDatabase, dropCitusDatabase, onCitus, prepareCitusDatabase } from './citus.ts';
import { databaseUrl, migratedEmbeddedSnapshot, postgresTemplate } from './db-templates.ts';
import { dropTestDatabase } from './drop-database.ts';

/** How long the test server keeps an idle keep-alive connection (longer than any test file runs). */
const IDLE_CONNECTION_MS = 900_000;

/** The longest a test request may wait for its answer (long polls wait 30 s at most). */
const REQUEST_TIMEOUT_MS = 120_000;

export interface TestServerOptions {
  env?: Record<string, string>;
  rateLimiter?: RateLimiter;
  now?: () => number;
  /** Use this database instead of a fresh one (e.g. two instances over one database). */
  database?: Database;
  /** HTTP limits other than the defaults (short timeouts). */
  serverLimits?: AppDeps['serverLimits'];
  /** Logger of the app (default: none). */
  logger?: AppDeps['logger'];
  /** Routes registered before listening (failure injection). */
  extraRoutes?: (app: FastifyInstance) => void;
  /** The resources served instead of the registry's (fixture resources). */
  resources?: readonly ResourceDescriptor[];
  /** Sees every statement the app builds on its own database (a recorder of the SQL sent). */
  plugin?: KyselyPlugin;
  /** How often the app checks its tables for a due ANALYZE or VACUUM (0: never). */
  tableMaintenanceEveryMs?: number;
}

export interface AccountOptions {
  name?: string;
  plan?: PlanCode;
  modules?: ModuleName[] | 'all';
  readOnly?: boolean;
  apiEnabled?: boolean;
  rateLimits?: Partial<RateLimitOverrides>;
}

export interface KeyOptions {
  name?: string;
  scopes?: string[];
  test?: boolean;
  expiresAt?: Date | null;
  allowedIps?: string[];
}

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestServer {
  url: string;
  app: FastifyInstance;
  db: Db;
  database: Database;
  config: Config;
  createAccount(options?: AccountOptions): Promise<AccountRow>;
  createKey(accountId: string, options?: KeyOptions): Promise<{ id: string; key: string }>;
  /** An account with every module and a `*:write` key: the common case. */
  createAccountWithKey(options?: AccountOptions & KeyOptions): Promise<{ account: AccountRow; key: string; keyId: string }>;
  request<T = any>(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<TestResponse<T>>;
  close(): Promise<void>;
}

/** The suite runs many servers at once on small machines, so a pool wait or a slow statement here is load,
 *  not the fault under test: the bounds themselves are tested with their own figures (database-faults,
 *  graceful-stop). Connecting stays bounded as in production. */
const SUITE_DB_TIMEOUTS = { ...DEFAULT_DB_TIMEOUTS, acquireMs: 30_000, statementMs: 60_000 };

/** A fresh migrated database: in-memory PGlite, or a new PostgreSQL database named for this server. Both are copies
 *  of a migrated template (db-templates.ts); migrate() then only confirms that every migration is there. */
export async function openTestDatabase(): Promise<Database & { drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: 'memory://', snapshot: await migratedEmbeddedSnapshot() });
    await prepareDatabase(database);
    return { ...database, drop: async () => {} };
  }
  const name = `balcao_test_${randomBytes(6).toString('hex')}`;
  // On Citus each database is made, migrated and distributed the operator's way: no template.
  const template = onCitus() ? undefined : await postgresTemplate(adminUrl);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  await admin.end();
  if (onCitus()) await prepareCitusDatabase(adminUrl, name);
  const database = await openDatabase({ databaseUrl: databaseUrl(adminUrl, name), dataDir: '', dbTimeouts: SUITE_DB_TIMEOUTS });
  await prepareDatabase(database);
  if (onCitus()) await distributeCitusDatabase(adminUrl, name);
  return {
    ...database,
    drop: async () => {
      await dropTestDatabase(adminUrl, name);
      if (onCitus()) await dropCitusDatabase(name);
    },
  };
}

/** Tests read tables by a name chosen at run time (and the catalogue), which the typed tables do not check. */
export const byTableName = (db: Db): Kysely<any> => db as unknown as Kysely<any>;

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const ownDatabase = options.database ? undefined : await openTestDatabase();
  const opened = options.database ?? (ownDatabase as Database);
  const database = options.plugin ? { ...opened, db: opened.db.withPlugin(options.plugin) } : opened;
  const config = loadConfig({ PORT: '0', BALCAO_PUBLIC_URL: 'http://balcao.test', ...options.env });
  const app = await buildApp({
    config,
    database,
    rateLimiter: options.rateLimiter,
    now: options.now,
    logger: options.logger ?? false,
    // A test's requests reuse their keep-alive connection after whatever the test does in between (a slow query on a
    // loaded machine): a connection the server closes as idle just as the next request goes out on it fails that
    // request ("fetch failed", seen after a 65 s pause). The test server keeps idle connections longer than any test.
    serverLimits: { keepAliveTimeoutMs: IDLE_CONNECTION_MS, ...options.serverLimits },
    resources: options.resources,
    tableMaintenanceEveryMs: options.tableMaintenanceEveryMs,
  });
  if (options.extraRoutes) {
    // Test-only routes are served but are no part of the API description, nor of its contract.
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, hidden: true };
    });
    options.extraRoutes(app);
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  let closing: Promise<void> | undefined;
  const server: TestServer = {
    url,
    app,
    db: database.db,
    database,
    config,
    async createAccount(o = {}) {
      return createAccount(database.db, {
        name: o.name ?? 'Loja Teste',
        plan_code: o.plan ?? 'enterprise',
        modules: o.modules === 'all' || o.modules === undefined ? [...MODULES] : o.modules,
        read_only: o.readOnly ?? false,
        api_enabled: o.apiEnabled ?? true,
        rate_limit_overrides: o.rateLimits,
      });
    },
    async createKey(accountId, o = {}) {
      const mode: KeyMode = o.test ? 'test' : 'live';
      const { row, key } = await createKey(database.db, {
        accountId,
        name: o.name ?? 'test key',
        mode,
        scopes: o.scopes ?? ['*:write'],
        allowedIps: o.allowedIps ?? [],
        expiresAt: o.expiresAt ?? null,
        brand: config.keyBrand,
      });
      return { id: row.id, key };
    },
    async createAccountWithKey(o = {}) {
      const account = await server.createAccount(o);
      const { id, key } = await server.createKey(account.id, { ...o, name: undefined });
      return { account, key, keyId: id };
    },
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      // Bounded: a request the server never answers fails here, naming itself, instead of holding the file forever.
      const res = await fetch(url + path, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).catch((err) => {
        throw new Error(`${method} ${path}: ${err?.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS} ms` : err}`);
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      // Every response a test receives must be one the served OpenAPI document describes.
      Contract.for(app.openapiJson()).check(method, path, { status: res.status, headers: res.headers, text });
      return { status: res.status, headers: res.headers, body: parsed as any, text };
    },
    close() {
      // Once, however many times it is called (a test may stop a server early and again in its cleanup).
      closing ??= (async () => {
        await app.close();
        if (ownDatabase) {
          await ownDatabase.close();
          await ownDatabase.drop();
        }
      })();
      return closing;
    },
  };
  return server;
}
