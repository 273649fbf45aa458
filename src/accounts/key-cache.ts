// Authentication lookups with a short-lived cache, so a known key costs no database round
// trip in steady state. An entry is served as is for FRESH_MS, then served while it is
// refreshed in the background until MAX_AGE_MS, after which the request waits for the
// database. So a revoked key or a changed account is seen by every instance within
// MAX_AGE_MS (< 5 s, DECISIONS A), and a brand-new key works at once (it was never cached).
// Unknown hashes are cached too (negatively), so a flood of bad keys costs no round trips; they
// have an LRU of their own, so such a flood cannot push the real keys out.
// Concurrent lookups of one hash share one query, and that shared query is bounded by
// LOOKUP_TIMEOUT_MS: a lookup stuck on a dead connection is dropped, so it cannot hold every
// later request of that key behind it (the next request starts a fresh lookup).
// Background refreshes are gathered for REFRESH_BATCH_MS and made in one query: a server used by many
// accounts at once (each key refreshed every FRESH_MS) would otherwise send the database a lookup for
// every key in use every two seconds, a transaction for every few requests.
import { LRUCache } from 'lru-cache';
import { expandScopes } from '../domain/scopes.ts';
import { compileAllowList, type IpMatcher } from '../domain/ip-allowlist.ts';
import { effectiveRateLimits } from '../domain/plans.ts';
import type { Db } from '../infra/db/engine/database.ts';
import type { AuthContext } from '../domain/tenant.ts';
import { findKeysWithAccounts, findKeyWithAccount, type KeyRow } from './key-repository.ts';
import { overridesOf, type AccountRow } from './account-repository.ts';

export interface AuthEntry {
  context: AuthContext;
  ipMatcher: IpMatcher | null;
}

interface CacheSlot {
  entry: AuthEntry | null;
  loadedAt: number;
  /** A background refresh of this slot is due or under way. */
  refreshing?: boolean;
}

/** Most hashes in one refresh query. */
const REFRESH_BATCH_MAX = 500;

export interface KeyCacheOptions {
  freshMs?: number;
  maxAgeMs?: number;
  /** Known keys kept, least recently used dropped first. */
  maxEntries?: number;
  /** Unknown hashes kept (apart from the known keys). */
  maxUnknownEntries?: number;
  /** Longest a (shared) database lookup may take before its waiters get a 503. */
  lookupTimeoutMs?: number;
  /** How long background refreshes are gathered before their one query. */
  refreshBatchMs?: number;
  now?: () => number;
}

/** A lookup that ran out of time (answered 503 service_unavailable). */
export class LookupTimeoutError extends Error {
  readonly code = 'LOOKUP_TIMEOUT';
  constructor(ms: number) {
    super(`key lookup took over ${ms} ms`);
  }
}

export class KeyCache {
  private readonly known: LRUCache<string, CacheSlot>;
  private readonly unknown: LRUCache<string, CacheSlot>;
  private readonly inflight = new Map<string, Promise<AuthEntry | null>>();
  /** Hashes whose background refresh is due, with their slots. */
  private readonly due = new Map<string, CacheSlot>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly refreshBatchMs: number;
  private readonly freshMs: number;
  private readonly maxAgeMs: number;
  private readonly lookupTimeoutMs: number;
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    options: KeyCacheOptions = {},
  ) {
    this.freshMs = options.freshMs ?? 2_000;
    this.maxAgeMs = options.maxAgeMs ?? 4_500;
    this.known = new LRUCache({ max: options.maxEntries ?? 50_000 });
    this.unknown = new LRUCache({ max: options.maxUnknownEntries ?? options.maxEntries ?? 50_000 });
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 1_800;
    this.refreshBatchMs = options.refreshBatchMs ?? 50;
    this.now = options.now ?? Date.now;
  }

  /** The key with this hash and its account, or null when no such key exists. */
  async lookup(hash: string): Promise<AuthEntry | null> {
    const slot = this.known.get(hash) ?? this.unknown.get(hash);
    if (slot) {
      const age = this.now() - slot.loadedAt;
      if (age < this.freshMs) return slot.entry;
      if (age < this.maxAgeMs) {
        // Serve the cached answer; refresh in the background. A failed refresh keeps the slot.
        if (!slot.refreshing) this.refreshLater(hash, slot);
        return slot.entry;
      }
    }
    return this.load(hash);
  }

  private refreshLater(hash: string, slot: CacheSlot): void {
    slot.refreshing = true;
    this.due.set(hash, slot);
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => this.refreshDue(), this.refreshBatchMs);
    this.refreshTimer.unref();
  }

  /** One query for the slots due (a batch at most): each is stored anew; a failed query leaves them as they were. */
  private refreshDue(): void {
    this.refreshTimer = undefined;
    const batch = [...this.due].slice(0, REFRESH_BATCH_MAX);
    for (const [hash] of batch) this.due.delete(hash);
    if (this.due.size > 0) {
      this.refreshTimer = setTimeout(() => this.refreshDue(), 0);
      this.refreshTimer.unref();
    }
    const hashes = batch.map(([hash]) => hash);
    withTimeout(findKeysWithAccounts(this.db, hashes), this.lookupTimeoutMs)
      .then((found) => {
        for (const hash of hashes) {
          const row = found.get(hash);
          this.store(hash, row ? toAuthEntry(row.key, row.account) : null);
        }
      })
      .catch(() => {
        // Served as cached until their age says otherwise; the next request past FRESH_MS asks again.
      })
      .finally(() => {
        for (const [, slot] of batch) slot.refreshing = false;
      });
  }

  private load(hash: string): Promise<AuthEntry | null> {
    let pending = this.inflight.get(hash);
    if (!pending) {
      const query = findKeyWithAccount(this.db, hash).then((found) => {
        const entry = found ? toAuthEntry(found.key, found.account) : null;
        this.store(hash, entry);
        return entry;
      });
      const bounded = withTimeout(query, this.lookupTimeoutMs);
      pending = bounded.finally(() => {
        if (this.inflight.get(hash) === pending) this.inflight.delete(hash);
      });
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private store(hash: string, entry: AuthEntry | null): void {
    // A key created or deleted since moves between the two.
    (entry ? this.unknown : this.known).delete(hash);
    (entry ? this.known : this.unknown).set(hash, { entry, loadedAt: this.now() });
  }
}

function withTimeout<T>(pending: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new LookupTimeoutError(ms)), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

export function toAuthEntry(key: KeyRow, account: AccountRow): AuthEntry {
  return {
    context: {
      keyId: key.id,
      keyName: key.name,
      keyLast4: key.last4,
      mode: key.mode,
      scopes: key.scopes,
      granted: expandScopes(key.scopes),
      allowedIps: key.allowed_ips,
      expiresAt: key.expires_at === null ? null : new Date(key.expires_at),
      revoked: key.revoked_at !== null,
      accountId: account.id,
      accountName: account.name,
      planCode: account.plan_code,
      modules: account.modules,
      apiEnabled: account.api_enabled,
      readOnly: account.read_only,
      rateLimits: effectiveRateLimits(account.plan_code, overridesOf(account)),
    },
    ipMatcher: compileAllowList(key.allowed_ips),
  };
}
