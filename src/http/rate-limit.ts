// Rate limiting of the pipeline (SPEC part 8, DECISIONS B.11 and B.16): the layers of a key and of an anonymous
// client IP, the X-RateLimit-* headers and the 429. Counting lives in the stores of src/infra/rate-limit.
//
// The store is chosen once here: in-process counters, or Redis when REDIS_URL is set. When Redis is
// unreachable the limiter FAILS OPEN to per-instance counters and logs the outage once (DECISIONS B.16;
// reasoning at the top of src/infra/rate-limit/redis-store.ts); `status()` reports it for readiness and metrics.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors/app-error.ts';
import { DAY_MS, type Decision, type Layer, MINUTE_MS, SECOND_MS } from '../infra/rate-limit/layers.ts';
import { MemoryRateLimitStore } from '../infra/rate-limit/memory-store.ts';
import { RedisRateLimitStore } from '../infra/rate-limit/redis-store.ts';
import type { RateLimitStore } from '../infra/rate-limit/store.ts';
import type { AuthContext } from '../domain/tenant.ts';

export interface RateLimiter {
  /** Counts an authenticated request; sets X-RateLimit-Limit/Remaining/Reset on the reply; throws AppError('rate-limit-exceeded') with Retry-After (and the X-RateLimit headers) when a layer is exceeded. */
  chargeKey(auth: AuthContext, access: 'read' | 'write', reply: FastifyReply): Promise<void>;
  /**
   * Counts `amounts` more (burst, minute, day) for a request already charged, all or nothing: a batch's further
   * operations. Throws the 429 of the first layer it would exceed, counting nothing more.
   */
  chargeMore(auth: AuthContext, access: 'read' | 'write', amounts: readonly [number, number, number], reply: FastifyReply): Promise<void>;
  /** Each layer of a key as it stands (GET /v1/me), counting nothing. */
  liveLimits(auth: AuthContext): Promise<LiveLimits>;
  /** Counts an anonymous request (no/malformed/unknown key) by client IP: 30/min; throws the 429 with Retry-After 60 when exceeded. */
  chargeAnonymous(ip: string, reply: FastifyReply): Promise<void>;
  /** Connects the shared store; resolves once Redis answered or `waitMs` ran out (then it fails open). */
  start(waitMs: number): Promise<void>;
  /** For readiness/metrics: which store, and whether Redis is currently reachable. */
  status(): { store: 'memory' | 'redis'; healthy: boolean };
  close(): Promise<void>;
}

/** One layer as it stands: its ceiling, what is left of it, and the seconds until its window restarts. */
export interface LayerStatus {
  limit: number;
  remaining: number;
  reset: number;
}
export interface LiveLimits {
  burst: LayerStatus;
  read: LayerStatus;
  write: LayerStatus;
  day: LayerStatus;
}

export interface RateLimiterOptions {
  redisUrl?: string;
  now?: () => number;
  logger: FastifyBaseLogger;
  /** Namespace of the Redis keys (tests give each limiter group its own). */
  keyPrefix?: string;
  /** Longest a Redis command may take before this instance counts on its own (RedisRateLimitStore's default: 250 ms). */
  redisCommandTimeoutMs?: number;
}

/** SPEC part 8: requests without a usable key, per client IP. */
export const ANONYMOUS_PER_MINUTE = 30;

/** What a refusal by each kind of layer says: `detail` and `Retry-After` are fixed by the spec's table. */
const REFUSAL = {
  second: { detail: 'per second', retryAfter: '1' },
  minute: { detail: 'per minute', retryAfter: '60' },
  day: { detail: 'per day', retryAfter: '86400' },
} as const;
type LayerKind = keyof typeof REFUSAL;
const KIND_OF_WINDOW: Record<number, LayerKind> = { [SECOND_MS]: 'second', [MINUTE_MS]: 'minute', [DAY_MS]: 'day' };

/** Index of the minute layer in `keyLayers`: its ceiling and window are the ones reported on success. */
const MINUTE_LAYER = 1;

/** Evaluated in this order (burst → minute → day); reads and writes have separate minute counters. */
function buildKeyLayers(limits: AuthContext['rateLimits'], access: 'read' | 'write'): Layer[] {
  return [
    { name: 'b', limit: limits.burst_per_second, windowMs: SECOND_MS },
    access === 'read'
      ? { name: 'r', limit: limits.requests_per_minute_read, windowMs: MINUTE_MS }
      : { name: 'w', limit: limits.requests_per_minute_write, windowMs: MINUTE_MS },
    { name: 'd', limit: limits.requests_per_day_total, windowMs: DAY_MS },
  ];
}

/** A cached key's limits are one object for as long as it is cached: its layers are built once. */
const layersByLimits = new WeakMap<AuthContext['rateLimits'], { read: Layer[]; write: Layer[] }>();
function keyLayers(limits: AuthContext['rateLimits'], access: 'read' | 'write'): Layer[] {
  return layersByAccess(limits)[access];
}
function layersByAccess(limits: AuthContext['rateLimits']): { read: Layer[]; write: Layer[] } {
  let layers = layersByLimits.get(limits);
  if (!layers) {
    layers = { read: buildKeyLayers(limits, 'read'), write: buildKeyLayers(limits, 'write') };
    layersByLimits.set(limits, layers);
  }
  return layers;
}

const ANONYMOUS_LAYERS: Layer[] = [{ name: 'a', limit: ANONYMOUS_PER_MINUTE, windowMs: MINUTE_MS }];

const unixSeconds = (ms: number) => String(Math.ceil(ms / 1000));

function refusal(layers: readonly Layer[], decision: Decision): AppError {
  const layer = layers[decision.exceeded] as Layer;
  const { detail, retryAfter } = REFUSAL[KIND_OF_WINDOW[layer.windowMs] as LayerKind];
  return new AppError('rate-limit-exceeded', {
    detail,
    headers: {
      'x-ratelimit-limit': String(layer.limit),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': unixSeconds(decision.resetsAt[decision.exceeded] as number),
      'retry-after': retryAfter,
    },
  });
}

/**
 * Anonymous clients are counted per address; an IPv6 client per /64, the block one subscriber usually
 * holds, so rotating through its own addresses does not multiply the allowance. IPv4-mapped IPv6 is IPv4.
 */
export function anonymousSubject(ip: string): string {
  if (!ipaddr.isValid(ip)) return `ip:${ip}`;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return `ip:${address.toString()}`;
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `ip6:${parts.join(':')}::/64`;
}

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const now = options.now ?? Date.now;
  const keyPrefix = options.keyPrefix ?? 'balcao:rl:';
  const store: RateLimitStore = options.redisUrl
    ? new RedisRateLimitStore({
        url: options.redisUrl,
        logger: options.logger,
        keyPrefix,
        now,
        commandTimeoutMs: options.redisCommandTimeoutMs,
      })
    : new MemoryRateLimitStore();
  return createRateLimiterOver(store, now);
}

/** The limiter over a given store (tests run the same suite over every store). */
export function createRateLimiterOver(store: RateLimitStore, now: () => number = Date.now): RateLimiter {
  return {
    async chargeKey(auth, access, reply) {
      const layers = keyLayers(auth.rateLimits, access);
      const decision = await store.charge(`key:${auth.keyId}`, layers, now());
      if (decision.exceeded >= 0) {
        const error = refusal(layers, decision);
        reply.headers(error.headers as Record<string, string>);
        throw error;
      }
      // SPEC part 8: Remaining is deliberately empty on success responses.
      reply.headers({
        'x-ratelimit-limit': String((layers[MINUTE_LAYER] as Layer).limit),
        'x-ratelimit-remaining': '',
        'x-ratelimit-reset': unixSeconds(decision.resetsAt[MINUTE_LAYER] as number),
      });
    },

    async chargeMore(auth, access, amounts, reply) {
      const layers = keyLayers(auth.rateLimits, access);
      const decision = await store.chargeIfFits(`key:${auth.keyId}`, layers, amounts, now());
      if (decision.exceeded >= 0) {
        const error = refusal(layers, decision);
        reply.headers(error.headers as Record<string, string>);
        throw error;
      }
    },

    async liveLimits(auth) {
      const { read, write } = layersByAccess(auth.rateLimits);
      // burst, read minute, write minute, day: the counters the two access classes share or keep apart.
      const layers = [read[0], read[1], write[1], read[2]] as Layer[];
      const at = now();
      const counts = await store.peek(`key:${auth.keyId}`, layers, at);
      const status = (i: number): LayerStatus => {
        const layer = layers[i] as Layer;
        const resetsAt = Math.floor(at / layer.windowMs) * layer.windowMs + layer.windowMs;
        return {
          limit: layer.limit,
          remaining: Math.max(0, layer.limit - (counts[i] ?? 0)),
          reset: Math.ceil((resetsAt - at) / 1000),
        };
      };
      return { burst: status(0), read: status(1), write: status(2), day: status(3) };
    },

    async chargeAnonymous(ip, reply) {
      const decision = await store.charge(anonymousSubject(ip), ANONYMOUS_LAYERS, now());
      if (decision.exceeded >= 0) {
        // Not an authenticated response, so only the spec's Retry-After (no X-RateLimit-* headers).
        const headers = { 'retry-after': REFUSAL.minute.retryAfter };
        reply.headers(headers);
        throw new AppError('rate-limit-exceeded', { detail: REFUSAL.minute.detail, headers });
      }
    },

    start: async (waitMs) => {
      await store.start?.(waitMs);
    },
    status: () => ({ store: store.kind, healthy: store.healthy() }),
    close: () => store.close(),
  };
}
