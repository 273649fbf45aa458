// Rate-limit counters shared through Redis by every instance, failing open to in-process counters while Redis is away.
//
// Decision (DECISIONS B.16): when Redis is unreachable the service keeps answering and counts per instance
// (fail open). Rate limiting protects capacity and fairness; it is not an authorization check, so losing the
// shared counters must not take the API down with it — that would turn a cache outage into a full outage.
// Each instance still enforces every limit with its own counters meanwhile, so a single client gets at most
// (number of instances) × its limits. The outage is logged once when it starts and once when it ends (not per
// request) and shows in `healthy()` for readiness and metrics. Only the database's loss gives 503.
//
// At start-up the server waits (bounded, BALCAO_REDIS_STARTUP_WAIT_MS) for Redis before it listens, so limits
// are exact across instances from the first request; only when that wait runs out does it fail open.
//
// A dead Redis adds no latency per request: the offline queue is disabled (a command on a broken connection
// fails at once), connecting and each command have short timeouts (1 s, 250 ms), and after one failure
// requests go straight to the memory counters until a background probe (or a reconnection) shows Redis works.
//
// Atomicity: one Lua script (EVALSHA via `defineCommand`) increments every layer of a request and sets the
// expiry of new counters in ONE round trip (the charges of one turn of the event loop share it, pipelined), so
// N instances sharing Redis let exactly as many requests through as one instance would. The window start is in the key and the expiry is relative to the caller's clock, so
// an injected clock works against a real Redis. Instances derive windows from their own clocks: keep them on
// NTP (a skew only matters for requests within that skew of a window boundary).
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import { counterKey, decide, decideAmounts, type Decision, type Layer } from './layers.ts';
import { MemoryRateLimitStore } from './memory-store.ts';
import type { RateLimitStore } from './store.ts';
import { type Deadline, noAnswerWithin, within } from '../deadline.ts';

/** The client library, loaded when a Redis store is made: a server without REDIS_URL never loads it
 *  (it is as heavy to load as Fastify, on every start). */
const loadRedisClient = (): typeof Redis => (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis;

const CHARGE_SCRIPT = `
local counts = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('PEXPIRE', key, ARGV[i]) end
  counts[i] = count
end
return counts
`;
const COMMAND = 'balcaoRateLimitCharge';

// KEYS: the counters; ARGV: their expiries, then the amounts, then the limits. Adds every amount only when
// every counter stays within its limit; answers the counts before (refused) or after (counted), then 1 if counted.
const CHARGE_IF_FITS_SCRIPT = `
local n = #KEYS
local counts = {}
local fits = 1
for i, key in ipairs(KEYS) do
  counts[i] = tonumber(redis.call('GET', key) or '0')
  if counts[i] + tonumber(ARGV[n + i]) > tonumber(ARGV[2 * n + i]) then fits = 0 end
end
if fits == 1 then
  for i, key in ipairs(KEYS) do
    local amount = tonumber(ARGV[n + i])
    if amount > 0 then
      local count = redis.call('INCRBY', key, amount)
      if count == amount then redis.call('PEXPIRE', key, ARGV[i]) end
    end
  end
end
counts[n + 1] = fits
return counts
`;
const COMMAND_IF_FITS = 'balcaoRateLimitChargeIfFits';
type ChargeCommand = (numKeys: number, ...keysThenTtls: (string | number)[]) => Promise<number[]>;
/** One request's charge waiting for its turn's pipeline. */
interface QueuedCharge {
  keys: string[];
  ttls: number[];
  resolve: (counts: number[]) => void;
  reject: (err: unknown) => void;
}

/** Counters live a little past their window so an instance whose clock lags slightly still finds them. */
const EXPIRY_SLACK_MS = 5_000;
const PROBE_SUBJECT = 'health-probe';
const PROBE_LAYER: Layer = { name: 'probe', limit: Number.MAX_SAFE_INTEGER, windowMs: 1_000 };

export interface RedisStoreOptions {
  url: string;
  logger: FastifyBaseLogger;
  keyPrefix: string;
  now?: () => number;
  connectTimeoutMs?: number;
  /** Longest a request may wait on a Redis that accepts connections but does not answer. */
  commandTimeoutMs?: number;
  /** How often to retry Redis after a failed command while the connection looks open. */
  probeEveryMs?: number;
  maxReconnectDelayMs?: number;
  /** Longest a request waits for the first connection when `start` was not called first. */
  startupWaitMs?: number;
}

type State = 'starting' | 'up' | 'down';

export class RedisRateLimitStore implements RateLimitStore {
  readonly kind = 'redis' as const;
  private readonly client: Redis;
  private readonly fallback: MemoryRateLimitStore;
  private readonly logger: FastifyBaseLogger;
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly probeEveryMs: number;
  private readonly commandTimeoutMs: number;
  private readonly deadline: Deadline<unknown>;
  private probing = false;
  private state: State = 'starting';
  private lastError = 'not connected yet';
  private probe: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly startupWaitMs: number;
  /** Settles once Redis answered or the start-up wait ran out: only requests arriving before it wait, once. */
  private starting: Promise<void> | undefined;
  private settleStart: (() => void) | undefined;
  private queued: QueuedCharge[] = [];

  constructor(options: RedisStoreOptions) {
    this.logger = options.logger;
    this.prefix = options.keyPrefix;
    this.now = options.now ?? Date.now;
    this.probeEveryMs = options.probeEveryMs ?? 1_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 250;
    this.deadline = noAnswerWithin('Redis', this.commandTimeoutMs);
    this.fallback = new MemoryRateLimitStore();
    const connectTimeout = options.connectTimeoutMs ?? 1_000;
    const maxReconnectDelay = options.maxReconnectDelayMs ?? 1_000;
    this.startupWaitMs = options.startupWaitMs ?? 5_000;
    this.client = new (loadRedisClient())(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout,
      retryStrategy: (attempt) => Math.min(attempt * 100, maxReconnectDelay),
    });
    this.client.defineCommand(COMMAND, { lua: CHARGE_SCRIPT });
    this.client.defineCommand(COMMAND_IF_FITS, { lua: CHARGE_IF_FITS_SCRIPT });
    // Without a listener ioredis prints every failed reconnection; transitions are logged once instead.
    this.client.on('error', (err: Error) => {
      this.lastError = err.message;
    });
    this.client.on('ready', () => this.markUp());
    this.client.on('close', () => {
      // While starting, a refused attempt is retried until the start-up wait decides.
      if (this.state !== 'starting') this.markDown(this.lastError === '' ? 'connection closed' : this.lastError);
    });
  }

  /**
   * Connects and waits until Redis answers or `waitMs` runs out; only then does the store fail open (and says
   * so once). The server calls it once the app is built, before listening, so the wait starts when the event
   * loop is free, and no request is counted per instance while Redis is merely slow to greet us.
   */
  start(waitMs: number = this.startupWaitMs): Promise<void> {
    this.starting ??= new Promise<void>((resolve) => {
      const settle = () => {
        clearTimeout(timer);
        this.client.off('ready', settle);
        this.settleStart = undefined;
        resolve();
      };
      // Decided in setImmediate (after the poll phase), so a greeting that arrived during a pause still counts.
      const timer = setTimeout(() => {
        setImmediate(() => {
          if (this.state === 'starting') this.markDown(`no answer within ${waitMs} ms of start-up`);
          settle();
        });
      }, waitMs);
      this.settleStart = settle;
      this.client.once('ready', settle);
      // A failed attempt is retried by the retry strategy until the wait ends.
      this.client.connect().catch(() => {});
    });
    return this.starting;
  }

  async charge(subject: string, layers: readonly Layer[], now: number): Promise<Decision> {
    if (this.state === 'starting') await this.start();
    if (this.state === 'up') {
      try {
        return decide(layers, await this.count(subject, layers, now), now);
      } catch (err) {
        this.markDown(err instanceof Error ? err.message : String(err));
      }
    }
    return this.fallback.charge(subject, layers, now);
  }

  async chargeIfFits(subject: string, layers: readonly Layer[], amounts: readonly number[], now: number): Promise<Decision> {
    if (this.state === 'starting') await this.start();
    if (this.state === 'up') {
      try {
        const keys = layers.map((layer) => counterKey(this.prefix, subject, layer, now));
        const ttls = layers.map((layer) => layer.windowMs - (now % layer.windowMs) + EXPIRY_SLACK_MS);
        const command = (this.client as unknown as Record<string, ChargeCommand>)[COMMAND_IF_FITS] as ChargeCommand;
        const answer = await within(
          command.call(this.client, keys.length, ...keys, ...ttls, ...amounts, ...layers.map((layer) => layer.limit)),
          this.commandTimeoutMs,
          this.deadline,
        );
        return decideAmounts(layers, answer.slice(0, layers.length), amounts, now);
      } catch (err) {
        this.markDown(err instanceof Error ? err.message : String(err));
      }
    }
    return this.fallback.chargeIfFits(subject, layers, amounts, now);
  }

  async peek(subject: string, layers: readonly Layer[], now: number): Promise<number[]> {
    if (this.state === 'starting') await this.start();
    if (this.state === 'up') {
      try {
        const keys = layers.map((layer) => counterKey(this.prefix, subject, layer, now));
        const values = await within(this.client.mget(...keys), this.commandTimeoutMs, this.deadline);
        return values.map((v) => (v === null ? 0 : Number(v)));
      } catch (err) {
        this.markDown(err instanceof Error ? err.message : String(err));
      }
    }
    return this.fallback.peek(subject, layers, now);
  }

  healthy(): boolean {
    return this.state === 'up';
  }

  async close(): Promise<void> {
    this.closed = true;
    this.settleStart?.();
    this.stopProbe();
    this.client.disconnect(false);
    await this.fallback.close();
  }

  /** Queues one request's charge for the end of this turn of the event loop (`sendCharges`). */
  private count(subject: string, layers: readonly Layer[], now: number): Promise<number[]> {
    const keys = layers.map((layer) => counterKey(this.prefix, subject, layer, now));
    const ttls = layers.map((layer) => layer.windowMs - (now % layer.windowMs) + EXPIRY_SLACK_MS);
    return new Promise<number[]>((resolve, reject) => {
      if (this.queued.push({ keys, ttls, resolve, reject }) === 1) setImmediate(this.sendCharges);
    });
  }

  /**
   * Sends the charges queued during this turn of the event loop as one pipeline: one socket write and one read
   * for every request the turn received, not one each (as postgres.js gathers its statements). Each charge stays
   * its own script call over its own subject's counters (one Redis Cluster slot), atomic as before.
   */
  private readonly sendCharges = (): void => {
    const charges = this.queued;
    this.queued = [];
    const pipeline = this.client.pipeline();
    const command = (pipeline as unknown as Record<string, ChargeCommand>)[COMMAND] as ChargeCommand;
    for (const charge of charges) command.call(pipeline, charge.keys.length, ...charge.keys, ...charge.ttls);
    within(pipeline.exec(), this.commandTimeoutMs, this.deadline).then(
      (answers) => {
        for (const [i, charge] of charges.entries()) {
          const [err, counts] = answers?.[i] ?? [new Error('Redis: no answer in the pipeline')];
          if (err) charge.reject(err);
          else charge.resolve(counts as number[]);
        }
      },
      (err: unknown) => {
        for (const charge of charges) charge.reject(err);
      },
    );
  };

  private markUp(): void {
    if (this.closed || this.state === 'up') return;
    const recovered = this.state === 'down';
    this.state = 'up';
    this.lastError = '';
    this.stopProbe();
    // Counts taken during the outage are per instance; dropping them keeps the next outage from starting stale.
    this.fallback.clear();
    if (recovered) this.logger.info({ rateLimitStore: 'redis' }, 'rate limits: Redis reachable again; counters are shared again');
    else this.logger.info({ rateLimitStore: 'redis' }, 'rate limits: counters shared through Redis');
  }

  private markDown(reason: string): void {
    if (this.closed || this.state === 'down') return;
    this.state = 'down';
    this.logger.warn(
      { rateLimitStore: 'redis', reason },
      'rate limits: Redis unreachable; failing open to per-instance counters until it is back',
    );
    this.startProbe();
  }

  // A command can fail while the connection stays open (a hung or read-only server), in which case no
  // 'ready' event will announce recovery: probe with the real script until it succeeds.
  private startProbe(): void {
    if (this.probe) return;
    this.probe = setInterval(() => {
      if (this.probing || this.client.status !== 'ready') return;
      this.probing = true;
      this.count(PROBE_SUBJECT, [PROBE_LAYER], this.now())
        .then(
          () => this.markUp(),
          () => {},
        )
        .finally(() => {
          this.probing = false;
        });
    }, this.probeEveryMs);
    this.probe.unref();
  }

  private stopProbe(): void {
    if (this.probe) clearInterval(this.probe);
    this.probe = undefined;
  }
}
