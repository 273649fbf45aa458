// In-process rate-limit counters: the store of a single instance, and the fallback while Redis is unreachable.
import { counterKey, decide, windowStart, type Decision, type Layer } from './layers.ts';
import type { RateLimitStore } from './store.ts';

/** How often (in clock time) expired counters are dropped; bounds memory to about this much traffic plus a day of keys. */
const SWEEP_EVERY_MS = 10_000;

interface Counter {
  count: number;
  expiresAt: number;
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = 'memory' as const;
  private readonly counters = new Map<string, Counter>();
  private nextSweepAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly prefix = '') {}

  // Synchronous between reading and writing the counters, so it is atomic within the process.
  async charge(subject: string, layers: readonly Layer[], now: number): Promise<Decision> {
    if (now >= this.nextSweepAt) this.sweep(now);
    const counts = layers.map((layer) => {
      const key = counterKey(this.prefix, subject, layer, now);
      let counter = this.counters.get(key);
      if (!counter || counter.expiresAt <= now) {
        counter = { count: 0, expiresAt: windowStart(now, layer.windowMs) + layer.windowMs };
        this.counters.set(key, counter);
      }
      counter.count += 1;
      return counter.count;
    });
    return decide(layers, counts, now);
  }

  healthy(): boolean {
    return true;
  }

  /** Number of live counters (for tests of the housekeeping). */
  size(): number {
    return this.counters.size;
  }

  clear(): void {
    this.counters.clear();
  }

  async close(): Promise<void> {
    this.counters.clear();
  }

  private sweep(now: number): void {
    for (const [key, counter] of this.counters) if (counter.expiresAt <= now) this.counters.delete(key);
    this.nextSweepAt = now + SWEEP_EVERY_MS;
  }
}
