// The real `balcao serve` in a child process (`node bin/balcao.js serve --json`) over a scratch database, with an
// account and key made beforehand, its logs collected, and ways to stop or kill it: for graceful-stop, crash and
// secrets tests. HTTP goes through node:http with a keep-alive agent, so the test controls its connections.
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { createAccount } from '../../src/accounts/account-repository.ts';
import { createKey } from '../../src/accounts/key-repository.ts';
import { MODULES } from '../../src/domain/modules.ts';
import { openDatabase } from '../../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../../src/events/capture/setup.ts';
import { BIN, killAtEnd, type ScratchEnv, SERVER_NODE_FLAGS, scratchEnv } from './cli.ts';
import { UNLIMITED } from './write-fixtures.ts';

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** GET /metrics on the process's own metrics listener (BALCAO_METRICS_PORT=0: a free port). */
  metricsUrl: string;
  /** Everything the process wrote to stderr (its log lines in --json mode). */
  logs(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

export interface Scratch extends ScratchEnv {
  key: string;
  keyId: string;
  accountId: string;
}

/** A scratch database with an account (every module, no practical limits) and a `*:write` key. */
export async function scratchWithKey(): Promise<Scratch> {
  const scratch = await scratchEnv();
  return { ...scratch, ...(await seedAccount(scratch.env.DATABASE_URL, scratch.env.BALCAO_DATA_DIR)) };
}

/** Into a database (migrated here if need be): an account with every module and no practical limits, and a
 *  `*:write` key of its live mode. */
export async function seedAccount(
  databaseUrl: string | undefined,
  dataDir?: string,
): Promise<{ key: string; keyId: string; accountId: string }> {
  const database = await openDatabase({ databaseUrl, dataDir: dataDir ?? '' }, 'test');
  try {
    await prepareDatabase(database);
    const account = await createAccount(database.db, {
      name: 'Loja Serve',
      plan_code: 'enterprise',
      modules: [...MODULES],
      read_only: false,
      api_enabled: true,
      rate_limit_overrides: UNLIMITED,
    });
    const { row, key } = await createKey(database.db, {
      accountId: account.id,
      name: 'serve key',
      mode: 'live',
      scopes: ['*:write'],
      allowedIps: [],
      expiresAt: null,
      brand: 'balcao',
    });
    return { key, keyId: row.id, accountId: account.id };
  } finally {
    await database.close();
  }
}

/** `onLog` is told all of stderr so far at each chunk, before the process serves too: a test waits on what it says. */
export function spawnServe(env: Record<string, string>, options: { onLog?: (stderr: string) => void } = {}): Promise<ServeProcess> {
  const { TEST_DATABASE_URL: _t, DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, BIN, 'serve', '--json'], {
    // No stop grace unless a test asks: a stop here has no balancer to wait for.
    env: { ...rest, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', BALCAO_METRICS_PORT: '0', BALCAO_SHUTDOWN_GRACE_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAtEnd(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
    options.onLog?.(stderr);
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`balcao serve did not start: ${stderr}`));
    }, 60_000);
    child.stdout?.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.trim().startsWith('{'));
      if (line && stdout.includes('\n')) {
        clearTimeout(timer);
        const announced = JSON.parse(line);
        resolve({ child, url: announced.url, metricsUrl: announced.metrics_url, logs: () => stderr, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`balcao serve exited with ${code}: ${stderr}`));
    });
  });
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** One request over `agent` (keep-alive); resolves with the answer, rejects on a dropped connection. */
export function send(
  url: string,
  method: string,
  path: string,
  options: {
    key?: string;
    body?: unknown;
    headers?: Record<string, string>;
    agent?: http.Agent;
    /** Send all of the body but its last byte, and that byte once this settles: the request stays in flight until then. */
    holdLastByteUntil?: Promise<void>;
    /** Called once the request's connection is established (the server's kernel has accepted it). */
    onConnected?: () => void;
  } = {},
): Promise<HttpAnswer> {
  const target = new URL(path, url);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method, headers, agent: options.agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => {
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    const onConnected = options.onConnected;
    if (onConnected) req.once('socket', (socket) => (socket.connecting ? socket.once('connect', onConnected) : onConnected()));
    if (options.holdLastByteUntil && payload) {
      req.write(payload.slice(0, -1));
      void options.holdLastByteUntil.then(() => req.end(payload.slice(-1)));
    } else req.end(payload);
  });
}

/** The sum of a metric's series at `metricsUrl` whose labels contain `labels` (e.g. `operation="sales.create"`). */
export async function metric(metricsUrl: string, name: string, labels = ''): Promise<number> {
  const res = await send(metricsUrl, 'GET', metricsUrl, { agent: new http.Agent({ keepAlive: false }) });
  return res.text
    .split('\n')
    .filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/** Requests of `operation` the server holds or has answered. */
export async function received(metricsUrl: string, operation: string): Promise<number> {
  const inFlight = await metric(metricsUrl, 'balcao_http_requests_in_flight');
  return inFlight + (await metric(metricsUrl, 'balcao_http_requests_total', `operation="${operation}"`));
}
