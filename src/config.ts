// Environment → one frozen, typed configuration, parsed once in the composition root.
import path from 'node:path';
import { isValidIpRange } from './domain/ip-allowlist.ts';

export interface Config {
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly redisUrl: string | undefined;
  readonly port: number;
  readonly host: string;
  readonly keyBrand: string;
  readonly publicUrl: string;
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT ? Number(env.PORT) : 3000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const brand = env.BALCAO_KEY_BRAND || 'balcao';
  if (!/^[a-z][a-z0-9]{1,19}$/.test(brand))
    throw new Error('BALCAO_KEY_BRAND must be 2..20 lowercase letters or digits, starting with a letter');
  const publicUrl = (env.BALCAO_PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  const errorsUrl = (env.BALCAO_ERRORS_URL || `${publicUrl}/errors`).replace(/\/+$/, '');
  const dataDir = env.BALCAO_DATA_DIR || './.balcao';
  return Object.freeze({
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: dataDir.startsWith('memory://') ? dataDir : path.resolve(dataDir),
    redisUrl: env.REDIS_URL || undefined,
    port,
    host: env.HOST || '127.0.0.1',
    keyBrand: brand,
    publicUrl,
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
