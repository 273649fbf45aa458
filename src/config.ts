// Environment → one frozen, typed configuration, parsed once in the composition root.
import path from 'node:path';
import { isValidIpRange } from './domain/ip-allowlist.ts';
import { parseTracesConfig, type TracesConfig } from './telemetry/traces-config.ts';

export interface Config {
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly redisUrl: string | undefined;
  readonly port: number;
  readonly host: string;
  readonly keyBrand: string;
  readonly publicUrl: string;
  /** The description's server: BALCAO_PUBLIC_URL when set, else `/` (wherever the description is served from), so
   *  neither a proxied deployment nor the committed description names an address that is not theirs. */
  readonly descriptionServerUrl: string;
  readonly errorsUrl: string;
  /** Fastify trustProxy value: false, true, or a list of IPs/CIDRs. */
  readonly trustProxy: boolean | string[];
  readonly logLevel: string;
  /** Bounds of every wait on PostgreSQL (docs/operations.md). */
  readonly dbTimeouts: DatabaseTimeouts;
  /** Longest `/health/ready` waits for the database before saying not ready. */
  readonly readinessTimeoutMs: number;
  /** With REDIS_URL: how long start-up waits for Redis before failing open (DECISIONS B.16). */
  readonly redisStartupWaitMs: number;
  /** Longest a graceful stop may take before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /** BALCAO_ACTOR: the operator the audit log names for a command run without --actor (else the OS user). */
  readonly operatorActor: string | undefined;
  /** After a stop signal, how long the listener stays open (unready) before it closes (BALCAO_SHUTDOWN_GRACE_MS). */
  readonly shutdownGraceMs: number;
  /** BALCAO_METRICS_PORT: /metrics on its own listener at metricsHost (unset: no such listener). */
  readonly metricsPort: number | undefined;
  /** BALCAO_METRICS_HOST: where that listener binds (loopback by default). */
  readonly metricsHost: string;
  /** BALCAO_METRICS_PUBLIC=true: /metrics on the public listener too (off by default). */
  readonly metricsPublic: boolean;
  /** PostgreSQL connections per process (BALCAO_DB_POOL_SIZE). */
  readonly dbPoolSize: number;
  /** BALCAO_DB_PREPARE (default true): false sends no named prepared statements and no timeouts in the
   *  start-up packet, for a transaction-pooling PgBouncer (docs/deployment.md). */
  readonly dbPrepare: boolean;
  /** BALCAO_LISTEN_DATABASE_URL: a direct (session) connection for LISTEN; unset: DATABASE_URL. */
  readonly listenDatabaseUrl: string | undefined;
  /** Processes `balcao serve` runs (BALCAO_WORKERS); more than one needs PostgreSQL. */
  readonly workers: number;
  /** Seconds between webhook delivery attempts (BALCAO_WEBHOOK_RETRY_SCHEDULE). */
  readonly webhookRetrySchedule: readonly number[];
  /** BALCAO_WEBHOOK_ALLOW_PRIVATE=1: http:// and private addresses allowed (development, tests). */
  readonly webhookAllowPrivate: boolean;
  /** How long one delivery attempt may take (BALCAO_WEBHOOK_TIMEOUT_SECONDS, default 10). */
  readonly webhookTimeoutMs: number;
  /** Read replicas of DATABASE_URL (BALCAO_READ_DATABASE_URL, one URL or a comma list); empty: every read on the primary. */
  readonly readDatabaseUrls: readonly string[];
  /** A replica further behind the primary than this is skipped (BALCAO_READ_MAX_LAG_MS). */
  readonly readMaxLagMs: number;
  /** OpenTelemetry traces (OTEL_TRACES_EXPORTER=otlp and the OTEL_* variables); undefined: off, the default. */
  readonly traces: TracesConfig | undefined;
}

export interface DatabaseTimeouts {
  /** Opening a connection to PostgreSQL. */
  readonly connectMs: number;
  /** Waiting for a pooled connection (all busy, or the server away). */
  readonly acquireMs: number;
  /** One SQL statement on the server (0: no limit). */
  readonly statementMs: number;
  /** An unused pooled connection is closed after this long. */
  readonly idleSeconds: number;
}

export const DEFAULT_DB_POOL_SIZE = 10;

/** Default BALCAO_READ_MAX_LAG_MS: how stale a replica may be for keys that have not just written (docs/scale-out.md). */
export const DEFAULT_READ_MAX_LAG_MS = 2_000;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT ? Number(env.PORT) : 3000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const brand = env.BALCAO_KEY_BRAND || 'balcao';
  if (!/^[a-z][a-z0-9]{1,19}$/.test(brand))
    throw new Error('BALCAO_KEY_BRAND must be 2..20 lowercase letters or digits, starting with a letter');
  const publicUrl = (env.BALCAO_PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  const errorsUrl = (env.BALCAO_ERRORS_URL || `${publicUrl}/errors`).replace(/\/+$/, '');
  const dataDir = env.BALCAO_DATA_DIR || './.balcao';
  const dbPoolSize = env.BALCAO_DB_POOL_SIZE ? Number(env.BALCAO_DB_POOL_SIZE) : DEFAULT_DB_POOL_SIZE;
  if (!Number.isInteger(dbPoolSize) || dbPoolSize < 1 || dbPoolSize > 1000)
    throw new Error(`BALCAO_DB_POOL_SIZE must be a whole number from 1 to 1000, got "${env.BALCAO_DB_POOL_SIZE}"`);
  const workers = env.BALCAO_WORKERS ? parseWorkerCount(env.BALCAO_WORKERS, 'BALCAO_WORKERS') : 1;
  const readDatabaseUrls = parseReadUrls(env.BALCAO_READ_DATABASE_URL, env.DATABASE_URL);
  return Object.freeze({
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: dataDir.startsWith('memory://') ? dataDir : path.resolve(dataDir),
    redisUrl: env.REDIS_URL || undefined,
    port,
    host: env.HOST || '127.0.0.1',
    keyBrand: brand,
    publicUrl,
    descriptionServerUrl: env.BALCAO_PUBLIC_URL ? publicUrl : '/',
    errorsUrl,
    trustProxy: parseTrustProxy(env.BALCAO_TRUST_PROXY),
    logLevel: env.LOG_LEVEL || 'info',
    dbTimeouts: Object.freeze({
      connectMs: milliseconds(env, 'BALCAO_DB_CONNECT_TIMEOUT_MS', 2_000),
      acquireMs: milliseconds(env, 'BALCAO_DB_ACQUIRE_TIMEOUT_MS', 1_500),
      statementMs: milliseconds(env, 'BALCAO_DB_STATEMENT_TIMEOUT_MS', 5_000, true),
      idleSeconds: milliseconds(env, 'BALCAO_DB_IDLE_TIMEOUT_S', 60),
    }),
    readinessTimeoutMs: milliseconds(env, 'BALCAO_READINESS_TIMEOUT_MS', 1_000),
    redisStartupWaitMs: milliseconds(env, 'BALCAO_REDIS_STARTUP_WAIT_MS', 5_000),
    shutdownTimeoutMs: milliseconds(env, 'BALCAO_SHUTDOWN_TIMEOUT_MS', 25_000),
    operatorActor: env.BALCAO_ACTOR || undefined,
    // No balancer sends traffic to the embedded database's one process: its stop need not wait for one.
    shutdownGraceMs: milliseconds(env, 'BALCAO_SHUTDOWN_GRACE_MS', env.DATABASE_URL ? 2_000 : 0, true),
    metricsPort: env.BALCAO_METRICS_PORT ? parsePort(env.BALCAO_METRICS_PORT, 'BALCAO_METRICS_PORT') : undefined,
    metricsHost: env.BALCAO_METRICS_HOST || '127.0.0.1',
    metricsPublic: env.BALCAO_METRICS_PUBLIC === 'true',
    dbPoolSize,
    dbPrepare: parseBoolean('BALCAO_DB_PREPARE', env.BALCAO_DB_PREPARE, true),
    listenDatabaseUrl: env.BALCAO_LISTEN_DATABASE_URL || undefined,
    workers,
    webhookRetrySchedule: parseSeconds('BALCAO_WEBHOOK_RETRY_SCHEDULE', env.BALCAO_WEBHOOK_RETRY_SCHEDULE, DEFAULT_RETRY_SCHEDULE),
    webhookAllowPrivate: env.BALCAO_WEBHOOK_ALLOW_PRIVATE === '1',
    webhookTimeoutMs: (parseSeconds('BALCAO_WEBHOOK_TIMEOUT_SECONDS', env.BALCAO_WEBHOOK_TIMEOUT_SECONDS, [10])[0] ?? 10) * 1000,
    readDatabaseUrls,
    readMaxLagMs: milliseconds(env, 'BALCAO_READ_MAX_LAG_MS', DEFAULT_READ_MAX_LAG_MS),
    traces: parseTracesConfig(env),
  });
}

/** A positive whole number from the environment (0 too when `zeroAllowed`), or the default. */
function milliseconds(env: NodeJS.ProcessEnv, name: string, fallback: number, zeroAllowed = false): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < (zeroAllowed ? 0 : 1))
    throw new Error(`${name} must be a whole number${zeroAllowed ? '' : ' above 0'}, got "${raw}"`);
  return value;
}

/** true/false (also 1/0, yes/no, on/off) from the environment, or the default when unset. */
function parseBoolean(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

/** A TCP port (0: any free one). */
function parsePort(value: string, what: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port > 65535) throw new Error(`${what} must be a port number, got "${value}"`);
  return port;
}

/** A worker count from BALCAO_WORKERS or `serve --workers`: 1 to 64. */
export function parseWorkerCount(value: string, what: string): number {
  const workers = Number(value);
  if (!/^\d+$/.test(value.trim()) || workers < 1 || workers > 64)
    throw new Error(`${what} must be a whole number from 1 to 64, got "${value}"`);
  return workers;
}

/** About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h: eight attempts over about a day and a half. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];

function parseSeconds(name: string, value: string | undefined, fallback: readonly number[]): readonly number[] {
  if (value === undefined || value.trim() === '') return fallback;
  const parts = value.split(',').map((s) => Number(s.trim()));
  if (parts.some((n) => !Number.isFinite(n) || n < 0)) throw new Error(`${name} must be a comma list of seconds, got "${value}"`);
  return parts;
}

function parseTrustProxy(value: string | undefined): boolean | string[] {
  if (!value) return false;
  if (value.trim().toLowerCase() === 'true') return true;
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const invalid = entries.filter((entry) => !isValidIpRange(entry));
  if (invalid.length)
    throw new Error(`BALCAO_TRUST_PROXY must be "true" or a comma list of IPs/CIDR ranges; not valid: ${invalid.join(', ')}`);
  return entries;
}

/** Replicas replay a PostgreSQL primary's WAL: without DATABASE_URL (the embedded engine) there is none, so the
 *  setting is refused rather than silently ignored (docs/decisions.md). */
function parseReadUrls(value: string | undefined, primary: string | undefined): string[] {
  const urls = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (urls.length === 0) return [];
  if (!primary)
    throw new Error(
      'BALCAO_READ_DATABASE_URL needs DATABASE_URL: read replicas are replicas of a PostgreSQL primary (the embedded database has none)',
    );
  const invalid = urls.filter((u) => !/^postgres(ql)?:\/\//.test(u));
  if (invalid.length) throw new Error(`BALCAO_READ_DATABASE_URL must be postgres:// URLs, comma separated; ${invalid.length} is not`);
  return urls;
}
