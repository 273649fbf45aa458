// A Redis for tests: the one named by TEST_REDIS_URL (CI starts it), or else a private redis-server on a free
// loopback port that dies with the test process, even if the process is killed.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import { createRateLimiter, type RateLimiter } from '../../src/http/rate-limit.ts';
import { freePort } from './free-port.ts';
import { until } from './poll.ts';
import { recordingLogger } from './recording-logger.ts';

export interface TestRedis {
  url: string;
  host: string;
  port: number;
  /** A fresh key namespace, so runs sharing one Redis (CI runs the suite twice) never see each other's counters. */
  newPrefix(): string;
  /** Deletes the keys of every prefix handed out, then stops the server if this helper started it. */
  close(): Promise<void>;
}

/**
 * One of several limiters counting in `redis` under one `prefix`, as instances sharing it do. Redis gets 10 s to
 * answer: past the store's 250 ms an instance counts on its own (rate-limit-failover tests that), which a loaded
 * machine would otherwise bring about in tests of exact shared counts.
 */
export function sharedLimiter(redis: TestRedis, prefix: string, now: () => number): RateLimiter {
  return createRateLimiter({
    redisUrl: redis.url,
    keyPrefix: prefix,
    now,
    logger: recordingLogger().logger,
    redisCommandTimeoutMs: 10_000,
  });
}

export async function startTestRedis(): Promise<TestRedis> {
  const prefixes: string[] = [];
  const newPrefix = () => {
    const prefix = `balcao-test:${randomUUID()}:`;
    prefixes.push(prefix);
    return prefix;
  };
  const fromEnv = process.env.TEST_REDIS_URL;
  if (fromEnv) {
    const { hostname, port } = new URL(fromEnv);
    return { url: fromEnv, host: hostname, port: Number(port || 6379), newPrefix, close: () => deleteKeys(fromEnv, prefixes) };
  }

  const port = await freePort();
  // bash waits on its stdin, our pipe: when this process exits for any reason the pipe closes and the
  // server is stopped, so no test run leaves a redis-server behind.
  const script = `command -v redis-server >/dev/null || { echo 'redis-server not found: install it or set TEST_REDIS_URL' >&2; exit 127; }
redis-server --bind 127.0.0.1 --port ${port} --save '' --appendonly no --daemonize no --loglevel warning >/dev/null &
pid=$!
read -r _ || true
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0`;
  const child = spawn('bash', ['-c', script], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `redis://127.0.0.1:${port}`;
  await Promise.race([
    waitForPong(port),
    exited.then((code) => {
      throw new Error(`test redis-server exited early (code ${code}); set TEST_REDIS_URL or install redis-server`);
    }),
  ]);
  return {
    url,
    host: '127.0.0.1',
    port,
    newPrefix,
    close: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}

async function deleteKeys(url: string, prefixes: string[]): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    for (const prefix of prefixes) {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await client.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    client.disconnect();
  }
}

/** Waits until the server answers PING (bounded, as every poll is). */
async function waitForPong(port: number): Promise<void> {
  await until(`the test redis-server on port ${port} answers PING`, () => pong(port));
}

function pong(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
