// Wakes held long-poll requests when their tenant gets an event: one LISTEN per instance (on
// PostgreSQL a NOTIFY reaches every instance; PGlite delivers its own in process), fanned out in
// memory to the waiters of that tenant. A key holds at most MAX_HELD_PER_KEY requests at once.
import type { Database } from '../infra/db/engine/database.ts';
import { EVENTS_CHANNEL } from './channels.ts';

export const MAX_HELD_PER_KEY = 5;

export class EventBus {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly heldByKey = new Map<string, number>();
  /** When each tenant's last event arrived (kept a minute): with read replicas, a long poll whose first
   *  look found nothing checks the primary when an event came within a replica's lag (event-routes.ts). */
  private readonly lastEventAt = new Map<string, number>();
  private unlisten: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(private readonly database: Database) {}

  async start(): Promise<void> {
    this.unlisten = await this.database.listen(EVENTS_CHANNEL, (tenant) => {
      if (this.database.reads) this.noteEvent(tenant);
      for (const wake of this.waiters.get(tenant) ?? []) wake();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const set of this.waiters.values()) for (const wake of set) wake();
    await this.unlisten?.();
  }

  /** True when an event of `tenant` arrived within the last `ms`. */
  eventWithin(tenant: string, ms: number): boolean {
    const at = this.lastEventAt.get(tenant);
    return at !== undefined && Date.now() - at <= ms;
  }

  private noteEvent(tenant: string): void {
    const now = Date.now();
    this.lastEventAt.delete(tenant); // re-inserted last: the map stays in arrival order
    this.lastEventAt.set(tenant, now);
    for (const [old, at] of this.lastEventAt) {
      if (now - at < 60_000) break;
      this.lastEventAt.delete(old);
    }
  }

  /** Reserves one held request for the key; false when it already holds the maximum. */
  hold(keyId: string): boolean {
    const held = this.heldByKey.get(keyId) ?? 0;
    if (held >= MAX_HELD_PER_KEY || this.closed) return false;
    this.heldByKey.set(keyId, held + 1);
    return true;
  }

  release(keyId: string): void {
    const held = (this.heldByKey.get(keyId) ?? 1) - 1;
    if (held <= 0) this.heldByKey.delete(keyId);
    else this.heldByKey.set(keyId, held);
  }

  /** Starts listening for the tenant's events before the caller looks: an event that arrives between
   *  the look and the wait is kept, so the next `next()` resolves at once (docs/events.md, long poll). */
  subscribe(tenant: string): EventSubscription {
    let set = this.waiters.get(tenant);
    if (!set) {
      set = new Set();
      this.waiters.set(tenant, set);
    }
    const members = set;
    let pending = false;
    let waiting: ((woken: boolean) => void) | undefined;
    const wake = () => {
      if (waiting) waiting(true);
      else pending = true;
    };
    members.add(wake);
    return {
      next: (ms, signal) => {
        if (this.closed || signal.aborted) return Promise.resolve(false);
        if (pending) {
          pending = false;
          return Promise.resolve(true);
        }
        if (ms <= 0) return Promise.resolve(false);
        return new Promise((resolve) => {
          const done = (woken: boolean) => {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            waiting = undefined;
            resolve(woken && !this.closed);
          };
          const onAbort = () => done(false);
          const timer = setTimeout(() => done(false), ms);
          signal.addEventListener('abort', onAbort, { once: true });
          waiting = done;
        });
      },
      close: () => {
        waiting?.(false);
        members.delete(wake);
        if (members.size === 0 && this.waiters.get(tenant) === members) this.waiters.delete(tenant);
      },
    };
  }
}

export interface EventSubscription {
  /** Resolves true at the tenant's next event since subscribing or since the last true (at once if one
   *  already came), false after `ms` or when `signal` aborts or the bus closes. */
  next(ms: number, signal: AbortSignal): Promise<boolean>;
  close(): void;
}
