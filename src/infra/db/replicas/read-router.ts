// Reads on PostgreSQL streaming replicas (BALCAO_READ_DATABASE_URL), without a key ever reading older data
// than its own last write. The reasoning is in docs/scale-out.md ("Read replicas"); in short:
// - A background poll (every POLL_MS) samples the primary's WAL position and each replica's replay position.
//   A replica's lag is how long ago the primary last stood at a position the replica has replayed; a replica
//   that does not answer within POLL_TIMEOUT_MS, or lags past the bound, is skipped until a poll says otherwise.
//   Requests read that state only: the hot path costs a map lookup (and a Redis GET when Redis is configured).
// - A write request notes its commit position per key (commit-lsn.ts); that key's reads go to a replica only
//   once the replica's replay position is past it, else to the primary. With REDIS_URL the positions are shared
//   by every instance; while Redis fails, reads go to the primary (an instance cannot see the others' writes).
// - A read that fails on a replica (stopped, restarted, a recovery conflict) is run again on the primary: a
//   replica's loss never fails a request.
import { once } from 'node:events';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import { AppError } from '../../../errors/app-error.ts';
import { lsnToNumber } from '../statements/commit-lsn.ts';
import type { Kysely } from 'kysely';
import { type Deadline, noAnswerWithin, within } from '../../deadline.ts';
import type { DB } from '../engine/tables.ts';

/** How long a Redis command of the router may take, by default, before Redis counts as failed (reads then go to the primary). */
const REDIS_COMMAND_TIMEOUT_MS = 250;

/** A Kysely handle on one server (database.ts names it Db; not imported from there, which imports this file). */
type Db = Kysely<DB>;

/** How often the positions are sampled; a key's reads return to a replica at most this long after it caught up. */
export const POLL_MS = 250;
/** A replica whose poll takes longer than this is down (with POLL_MS: skipped within 2 s of stopping). */
export const POLL_TIMEOUT_MS = 1_000;
/** A key's noted position outlives the lag bound by this much (after it, any usable replica has replayed it). */
const NOTE_SLACK_MS = 10_000;

export type ReplicaState = 'starting' | 'up' | 'lagging' | 'down' | 'not_standby';

export interface ReplicaStatus {
  /** host:port/database of the replica (never its credentials). */
  name: string;
  state: ReplicaState;
  /** Milliseconds behind the primary at the last poll (null: unknown). */
  lag_ms: number | null;
}

export interface ReplicaCounters {
  name: string;
  /** Reads answered by this replica. */
  reads: number;
  /** Reads that failed on this replica and were answered by the primary. */
  fallbacks: number;
}

export interface ReplicaConnection {
  url: string;
  db: Db;
  close(): Promise<void>;
}

export interface ReadRouterOptions {
  primary: Db;
  replicas: readonly ReplicaConnection[];
  maxLagMs: number;
  /** With it, commit positions are shared by every instance. */
  redisUrl?: string;
  pollMs?: number;
  now?: () => number;
  /** How long a Redis command may take before Redis counts as failed (default 250 ms). */
  redisCommandTimeoutMs?: number;
}

type Log = (level: 'info' | 'warn', details: Record<string, unknown>, message: string) => void;

interface Replica extends ReplicaCounters {
  db: Db;
  close(): Promise<void>;
  state: ReplicaState;
  replayLsn: number | null;
  lagMs: number | null;
  lastError: string | undefined;
}

/** Keeps the larger of the stored and the given position, and renews its expiry, in one round trip. */
const NOTE_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`;
const REDIS_PREFIX = 'balcao:read-lsn:';

const loadRedisClient = (): typeof Redis => (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis;

export function replicaName(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'replica';
  }
}

const pollDeadline = noAnswerWithin('the database', POLL_TIMEOUT_MS);

export class ReadRouter {
  readonly maxLagMs: number;
  private readonly primary: Db;
  private readonly replicas: Replica[];
  private readonly now: () => number;
  private readonly pollMs: number;
  /** The primary's WAL position over the last maxLag + a little, oldest first. */
  private samples: { at: number; lsn: number }[] = [];
  /** This instance's keys' commit positions, until they no longer constrain any replica. */
  private readonly noted = new Map<string, { lsn: number; until: number }>();
  private readonly redis: Redis | undefined;
  /** Until then reads stay on the primary: Redis failed, so other instances' writes may be unseen. */
  private primaryOnlyUntil = 0;
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The poll under way, awaited by close() before the pools end. */
  private ticking: Promise<void> | undefined;
  private closed = false;
  private log: Log = () => {};
  private readonly redisTimeoutMs: number;
  private readonly redisDeadline: Deadline<unknown>;
  /** Commands sent before the connection is ready wait for it here. */
  private readyWait: Promise<void> | undefined;
  /** Set at the first connection to Redis; failures before it are not outages (redisFailed). */
  private redisConnected = false;
  private warnedUnconnected = false;
  primaryReads = 0;
  /** Settles after the first poll: before it every read goes to the primary. */
  readonly firstPoll: Promise<void>;

  constructor(options: ReadRouterOptions) {
    this.primary = options.primary;
    this.maxLagMs = options.maxLagMs;
    this.now = options.now ?? Date.now;
    this.pollMs = options.pollMs ?? POLL_MS;
    this.replicas = options.replicas.map((r) => ({
      name: replicaName(r.url),
      db: r.db,
      close: r.close,
      state: 'starting',
      replayLsn: null,
      lagMs: null,
      lastError: undefined,
      reads: 0,
      fallbacks: 0,
    }));
    this.redisTimeoutMs = options.redisCommandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS;
    this.redisDeadline = noAnswerWithin('Redis', this.redisTimeoutMs);
    if (options.redisUrl) {
      this.redis = new (loadRedisClient())(options.redisUrl, {
        lazyConnect: false,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: 1_000,
        retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
      });
      this.redis.on('error', (err: Error) => this.redisFailed(err));
      this.redis.on('ready', () => {
        this.redisConnected = true;
      });
    }
    this.firstPoll = this.tick();
    this.timer = setInterval(() => void this.tick(), this.pollMs);
    this.timer.unref();
  }

  /** Where state changes are logged (the app's logger, once built). */
  setLogger(log: Log): void {
    this.log = log;
  }

  /** Runs `read` on a replica that may answer `keyId` (see the top of this file), else on the primary
   *  (`keyId` null: the primary, for a read that must see the latest commit). */
  async run<T>(keyId: string | null | undefined, read: (db: Db) => Promise<T>): Promise<T> {
    const picked = keyId === null ? null : this.pick(keyId);
    const replica = picked instanceof Promise ? await picked : picked;
    if (!replica) {
      this.primaryReads++;
      return read(this.primary);
    }
    try {
      const result = await read(replica.db);
      replica.reads++;
      return result;
    } catch (err) {
      // The request's own refusals (404, 422) are answers, not the replica's failure.
      if (err instanceof AppError) {
        replica.reads++;
        throw err;
      }
      replica.fallbacks++;
      this.markDown(replica, err);
      this.primaryReads++;
      return read(this.primary);
    }
  }

  /** A usable replica for `keyId`, or null for the primary. Synchronous unless Redis has to be asked. */
  pick(keyId: string | undefined): Replica | null | Promise<Replica | null> {
    const now = this.now();
    if (now < this.primaryOnlyUntil) return null;
    const usable = this.replicas.filter((r) => r.state === 'up');
    if (usable.length === 0) return null;
    const local = keyId === undefined ? 0 : this.localLsn(keyId, now);
    if (keyId === undefined || !this.redis) return this.choose(usable, local);
    // Other instances' positions are unknown until the first connection: the primary answers meanwhile.
    if (!this.redisConnected) return null;
    return this.redisCall(this.redis, (redis) => redis.get(REDIS_PREFIX + keyId)).then(
      (stored) => this.choose(usable, Math.max(local, stored ? Number(stored) : 0)),
      (err: unknown) => {
        this.redisFailed(err);
        return null;
      },
    );
  }

  /** Notes a key's commit position, on this instance and (when configured) in Redis, before the write is answered. */
  async noteWrite(keyId: string, lsn: number): Promise<void> {
    const now = this.now();
    const ttl = this.maxLagMs + NOTE_SLACK_MS;
    const current = this.noted.get(keyId);
    if (!current || current.lsn < lsn || current.until < now)
      this.noted.set(keyId, { lsn: Math.max(lsn, current?.lsn ?? 0), until: now + ttl });
    if (!this.redis) return;
    try {
      await this.redisCall(this.redis, (redis) => redis.eval(NOTE_SCRIPT, 1, REDIS_PREFIX + keyId, String(lsn), String(ttl)));
    } catch (err) {
      this.redisFailed(err);
    }
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((r) => ({ name: r.name, state: r.state, lag_ms: r.lagMs === null ? null : Math.round(r.lagMs) }));
  }

  counters(): ReplicaCounters[] {
    return this.replicas.map(({ name, reads, fallbacks }) => ({ name, reads, fallbacks }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    this.redis?.disconnect();
    await Promise.allSettled(this.replicas.map((r) => r.close()));
  }

  private choose(usable: Replica[], needed: number): Replica | null {
    // Round robin over the replicas that have replayed the key's last commit.
    for (let i = 0; i < usable.length; i++) {
      const replica = usable[(this.next + i) % usable.length] as Replica;
      if ((replica.replayLsn ?? -1) >= needed) {
        this.next = (this.next + i + 1) % usable.length;
        return replica;
      }
    }
    return null;
  }

  private localLsn(keyId: string, now: number): number {
    const entry = this.noted.get(keyId);
    if (!entry) return 0;
    if (entry.until >= now) return entry.lsn;
    this.noted.delete(keyId);
    return 0;
  }

  /**
   * Runs a Redis command once the connection is ready, within the command timeout. A command sent before
   * (the offline queue is off) would fail at once: a write answered in the first moments of an instance, before
   * its connection was up, sent every read to the primary for the lag bound although Redis never failed.
   */
  private redisCall<T>(redis: Redis, command: (redis: Redis) => Promise<T>): Promise<T> {
    const call = redis.status === 'ready' ? command(redis) : this.redisReady(redis).then(() => command(redis));
    return within(call, this.redisTimeoutMs, this.redisDeadline as Deadline<T>);
  }

  /** Settles when the connection is ready, or fails with its next error; one wait shared by every command. */
  private redisReady(redis: Redis): Promise<void> {
    this.readyWait ??= once(redis, 'ready').then(
      () => {
        this.readyWait = undefined;
      },
      (err: unknown) => {
        this.readyWait = undefined;
        throw err;
      },
    );
    return this.readyWait;
  }

  private redisFailed(err: unknown): void {
    const now = this.now();
    // Before the first connection there is no outage to cover: reads stay on the primary until it is made (pick),
    // and what Redis holds is then complete for what other instances noted. A connection that times out because
    // this process's event loop was busy (a start-up under load) is not Redis failing either.
    if (!this.redisConnected) {
      if (!this.warnedUnconnected)
        this.log(
          'warn',
          { err: err instanceof Error ? err.message : String(err) },
          'Redis not connected yet: reads go to the primary until it is',
        );
      this.warnedUnconnected = true;
      return;
    }
    // Logged once a period: a Redis that stays away fails every command.
    if (now >= this.primaryOnlyUntil)
      this.log(
        'warn',
        { err: err instanceof Error ? err.message : String(err), ms: this.maxLagMs + 2 * this.pollMs },
        'Redis failed: reads go to the primary for the lag bound',
      );
    // Writes noted elsewhere meanwhile are older than the lag bound once it has passed since the failure.
    this.primaryOnlyUntil = now + this.maxLagMs + 2 * this.pollMs;
  }

  private tick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.ticking ??= this.poll().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  /** One round: the primary's position, then every replica's. */
  private async poll(): Promise<void> {
    const sentAt = this.now();
    try {
      const { rows } = await within(
        sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(this.primary),
        POLL_TIMEOUT_MS,
        pollDeadline,
      );
      const lsn = lsnToNumber(rows[0]?.lsn);
      if (lsn !== null) this.samples.push({ at: sentAt, lsn });
    } catch {
      // The primary is away: replicas are still polled, their lag grows from the last sample.
    }
    const keepFrom = sentAt - this.maxLagMs - 2 * POLL_TIMEOUT_MS;
    while (this.samples.length > 1 && (this.samples[1] as { at: number }).at < keepFrom) this.samples.shift();
    await Promise.all(this.replicas.map((r) => this.pollReplica(r)));
    this.prune();
  }

  private async pollReplica(replica: Replica): Promise<void> {
    try {
      const { rows } = await within(
        sql<{ standby: boolean; lsn: string | null }>`select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn()::text as lsn`.execute(
          replica.db,
        ),
        POLL_TIMEOUT_MS,
        pollDeadline,
      );
      const row = rows[0];
      if (!row?.standby) {
        replica.replayLsn = null;
        replica.lagMs = null;
        return this.setState(replica, 'not_standby', { reason: 'not in recovery: not a streaming replica of the primary' });
      }
      replica.replayLsn = lsnToNumber(row.lsn);
      replica.lagMs = this.lagOf(replica.replayLsn);
      replica.lastError = undefined;
      this.setState(replica, replica.lagMs !== null && replica.lagMs <= this.maxLagMs ? 'up' : 'lagging', { lag_ms: replica.lagMs });
    } catch (err) {
      this.markDown(replica, err);
    }
  }

  /** How long ago the primary last stood at a position `replayed` covers (0: caught up; null: unknown). */
  private lagOf(replayed: number | null): number | null {
    const latest = this.samples[this.samples.length - 1];
    if (replayed === null || !latest) return null;
    if (replayed >= latest.lsn) return 0;
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i] as { at: number; lsn: number };
      if (sample.lsn <= replayed) return this.now() - sample.at;
    }
    // Behind every sample kept: at least as far behind as the oldest, which is past the bound.
    return this.now() - (this.samples[0] as { at: number }).at;
  }

  private markDown(replica: Replica, err: unknown): void {
    replica.lastError = err instanceof Error ? err.message : String(err);
    replica.lagMs = null;
    this.setState(replica, 'down', { error: replica.lastError });
  }

  private setState(replica: Replica, state: ReplicaState, details: Record<string, unknown>): void {
    if (replica.state === state) return;
    const was = replica.state;
    replica.state = state;
    if (state === 'up') this.log('info', { replica: replica.name, was, ...details }, 'read replica in use');
    else this.log('warn', { replica: replica.name, state, ...details }, 'read replica skipped: reads go to the primary');
  }

  /** Positions every replica has replayed constrain nothing any more. */
  private prune(): void {
    const replayed = this.replicas.map((r) => r.replayLsn ?? -1);
    const floor = Math.min(...replayed);
    const now = this.now();
    for (const [key, entry] of this.noted) if (entry.lsn <= floor || entry.until < now) this.noted.delete(key);
  }
}

/** Runs a read where the database's router sends it (the primary when there are no replicas). */
export interface ReadRunner {
  <T>(keyId: string | null | undefined, read: (db: Db) => Promise<T>): Promise<T>;
  /** How far behind the primary a routed read may be: the lag bound plus the poll's age (0 without replicas). */
  readonly stalenessMs: number;
}

export function readRunner(database: { db: Db; reads?: ReadRouter }): ReadRunner {
  const { reads, db } = database;
  if (!reads) return Object.assign(<T>(_keyId: unknown, read: (db: Db) => Promise<T>) => read(db), { stalenessMs: 0 });
  return Object.assign(<T>(keyId: string | null | undefined, read: (db: Db) => Promise<T>) => reads.run(keyId, read), {
    stalenessMs: reads.maxLagMs + 2 * POLL_MS,
  });
}
