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
  /** PostgreSQL connections per process (BALCAO_DB_POOL_SIZE). */
  readonly dbPoolSize: number;
  /** Processes `balcao serve` runs (BALCAO_WORKERS); more than one needs PostgreSQL. */
  readonly workers: number;
}

export const DEFAULT_DB_POOL_SIZE = 10;

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
    dbPoolSize,
    workers,
  });
}

/** A worker count from BALCAO_WORKERS or `serve --workers`: 1 to 64. */
export function parseWorkerCount(value: string, what: string): number {
  const workers = Number(value);
  if (!/^\d+$/.test(value.trim()) || workers < 1 || workers > 64)
    throw new Error(`${what} must be a whole number from 1 to 64, got "${value}"`);
  return workers;
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
