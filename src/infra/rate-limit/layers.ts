// Fixed clock-aligned windows and the evaluation of a request's layers (DECISIONS B.11), shared by every store.

/** One rate layer a request is counted in. `name` keeps counters of different layers apart. */
export interface Layer {
  name: string;
  limit: number;
  windowMs: number;
}

/** What one charge found: the layer that refused the request (if any) and, per layer, when its window restarts. */
export interface Decision {
  /** Index in the layers given to `charge` of the first layer exceeded, or -1 when the request is allowed. */
  exceeded: number;
  /** Count of each layer after this request, in the order given. */
  counts: number[];
  /** Unix milliseconds when each layer's current window ends, in the order given. */
  resetsAt: number[];
}

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
/** Unix time has no leap seconds, so multiples of 86 400 000 ms since the epoch are UTC midnights. */
export const DAY_MS = 86_400_000;

/** Start of the window holding `now`: windows are aligned to the clock, not to the first request. */
export const windowStart = (now: number, windowMs: number): number => Math.floor(now / windowMs) * windowMs;

/**
 * The counter of one layer for one subject in the window holding `now`. The window start is part of the
 * key, so a new window is a new counter and expiry is only housekeeping. The subject is a Redis hash tag
 * (`{…}`), so all counters of one request live in one Redis Cluster slot and one script can touch them.
 */
export const counterKey = (prefix: string, subject: string, layer: Layer, now: number): string =>
  `${prefix}{${subject}}:${layer.name}:${windowStart(now, layer.windowMs)}`;

/** A charge of `amounts` over counts that stood at `counts`: refused at the first layer it would exceed. */
export function decideAmounts(layers: readonly Layer[], counts: number[], amounts: readonly number[], now: number): Decision {
  const exceeded = layers.findIndex((layer, i) => (counts[i] ?? 0) + (amounts[i] ?? 0) > layer.limit);
  const resetsAt = layers.map((layer) => windowStart(now, layer.windowMs) + layer.windowMs);
  return { exceeded, counts: exceeded >= 0 ? counts : counts.map((c, i) => c + (amounts[i] ?? 0)), resetsAt };
}

/** Every layer was counted before this runs; the first exceeded, in the order given, refuses the request. */
export function decide(layers: readonly Layer[], counts: number[], now: number): Decision {
  const exceeded = layers.findIndex((layer, i) => (counts[i] ?? 0) > layer.limit);
  const resetsAt = layers.map((layer) => windowStart(now, layer.windowMs) + layer.windowMs);
  return { exceeded, counts, resetsAt };
}
