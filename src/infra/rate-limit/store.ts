// The rate-limit store interface: counts one request in all its layers at once, then evaluates them.
import type { Decision, Layer } from './layers.ts';

export interface RateLimitStore {
  readonly kind: 'memory' | 'redis';
  /**
   * Counts one request of `subject` in every layer (a refused request counts too), then evaluates the layers
   * in the order given. Atomic: concurrent charges never see the same count, so a limit N lets exactly N through.
   */
  charge(subject: string, layers: readonly Layer[], now: number): Promise<Decision>;
  /**
   * Adds `amounts[i]` to each layer only if every layer stays within its limit; otherwise adds nothing and
   * reports the first layer that would be exceeded (a batch's operations, all or none). Atomic like `charge`.
   */
  chargeIfFits(subject: string, layers: readonly Layer[], amounts: readonly number[], now: number): Promise<Decision>;
  /** The current count of each layer, without counting anything (GET /v1/me). */
  peek(subject: string, layers: readonly Layer[], now: number): Promise<number[]>;
  /** Connects, waiting at most `waitMs` for the shared store to answer before failing open (no-op in memory). */
  start?(waitMs: number): Promise<void>;
  /** False while the store runs on a fallback (Redis unreachable). */
  healthy(): boolean;
  close(): Promise<void>;
}
