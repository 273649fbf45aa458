// In-process rate-limit counters: the store of a single instance, and the fallback while Redis is unreachable.
// Counters are kept per subject and layer, for the current window only: a request builds no key string
// (the Redis store's keys name the window instead, see layers.ts).
import { decide, decideAmounts, windowStart, type Decision, type Layer } from './layers.ts';
import type { RateLimitStore } from './store.ts';

/** How often (in clock time) expired counters are dropped; bounds memory to about this much traffic plus a day of keys. */
const SWEEP_EVERY_MS = 10_000;

interface Counter {
  /** Start of the window counted; a request in another window starts the counter again. */
  windowStart: number;
  expiresAt: number;
  count: number;
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = 'memory' as const;
  /** By subject, then by layer name. */
  private readonly subjects = new Map<string, Map<string, Counter>>();
  private nextSweepAt = Number.NEGATIVE_INFINITY;

  // Synchronous between reading and writing the counters, so it is atomic within the process.
  async charge(subject: string, layers: readonly Layer[], now: number): Promise<Decision> {
    if (now >= this.nextSweepAt) this.sweep(now);
    let counters = this.subjects.get(subject);
    if (!counters) {
      counters = new Map();
      this.subjects.set(subject, counters);
    }
    const counts = new Array<number>(layers.length);
    for (let i = 0; i < layers.length; i++) {
      const layer = layers[i] as Layer;
      const start = windowStart(now, layer.windowMs);
      let counter = counters.get(layer.name);
      if (!counter || counter.windowStart !== start) {
        counter = { windowStart: start, expiresAt: start + layer.windowMs, count: 0 };
        counters.set(layer.name, counter);
      }
      counts[i] = ++counter.count;
    }
    return decide(layers, counts, now);
  }

  async chargeIfFits(subject: string, layers: readonly Layer[], amounts: readonly number[], now: number): Promise<Decision> {
    const counts = await this.peek(subject, layers, now);
    const decision = decideAmounts(layers, counts, amounts, now);
    if (decision.exceeded >= 0) return decision;
    for (let i = 0; i < layers.length; i++) this.counter(subject, layers[i] as Layer, now).count += amounts[i] ?? 0;
    return decision;
  }

  async peek(subject: string, layers: readonly Layer[], now: number): Promise<number[]> {
    const counters = this.subjects.get(subject);
    return layers.map((layer) => {
      const counter = counters?.get(layer.name);
      return counter && counter.windowStart === windowStart(now, layer.windowMs) ? counter.count : 0;
    });
  }

  private counter(subject: string, layer: Layer, now: number): Counter {
    let counters = this.subjects.get(subject);
    if (!counters) {
      counters = new Map();
      this.subjects.set(subject, counters);
    }
    const start = windowStart(now, layer.windowMs);
    let counter = counters.get(layer.name);
    if (!counter || counter.windowStart !== start) {
      counter = { windowStart: start, expiresAt: start + layer.windowMs, count: 0 };
      counters.set(layer.name, counter);
    }
    return counter;
  }

  healthy(): boolean {
    return true;
  }

  /** Number of live counters (for tests of the housekeeping). */
  size(): number {
    let n = 0;
    for (const counters of this.subjects.values()) n += counters.size;
    return n;
  }

  clear(): void {
    this.subjects.clear();
  }

  async close(): Promise<void> {
    this.subjects.clear();
  }

  private sweep(now: number): void {
    for (const [subject, counters] of this.subjects) {
      for (const [name, counter] of counters) if (counter.expiresAt <= now) counters.delete(name);
      if (counters.size === 0) this.subjects.delete(subject);
    }
    this.nextSweepAt = now + SWEEP_EVERY_MS;
  }
}
