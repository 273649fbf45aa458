// Write lanes: a tenant's creations that lock its counters (a sale's number, the events counter) queued on one
// connection of their own instead of waiting for each other's row locks in PostgreSQL. Such a creation sends all its
// statements and its COMMIT without awaiting an answer (send-ahead.ts), so the next one can follow it on the same
// connection at once: the server runs them back to back, and no backend sleeps on a lock and is woken again. Under
// one account's concurrent sales that wait was a fifth of PostgreSQL's CPU per sale (docs/performance.md).
//
// A lane is a postgres.js client of one connection, not a connection reserved from the pool: a reserved connection
// that once finds its pipeline full sends its queued statements one per answer from then on, while a client's own
// queue is sent whole each time its connection runs dry. A transaction enters the lane once the one before it has
// sent its end (COMMIT or ROLLBACK), so the statements of two transactions never interleave; nothing is sent on the
// lane for a transaction after its end.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Sql } from 'postgres';
import { within } from '../deadline.ts';

/** A write's request for a lane, for the transactions it opens (`held` while one of them is on the lane). */
export interface LaneRequest {
  key: string;
  held: boolean;
}

const requests = new AsyncLocalStorage<LaneRequest>();

/** Runs `fn` with its transactions on the write lane of `key` (a tenant), where the database has lanes. */
export function onWriteLane<T>(key: string, fn: () => T): T {
  return requests.run({ key, held: false }, fn);
}

/** The running write's request, unless one of its transactions is on the lane already: a transaction opened inside
 *  that one would wait for it for ever, so it takes a connection of the pool instead. */
export function laneRequest(): LaneRequest | undefined {
  const request = requests.getStore();
  return request && !request.held ? request : undefined;
}

/** One lane: its client, and the end of the last transaction that entered it. */
class WriteLane {
  private tail: Promise<void> = Promise.resolve();
  constructor(readonly sql: Sql) {}

  /** Waits until the transaction before has sent its end (at most `ms`); answers the call that lets the next one in. */
  async enter(ms: number, error: () => Error): Promise<() => void> {
    const before = this.tail;
    let leave!: () => void;
    this.tail = new Promise<void>((resolve) => {
      leave = resolve;
    });
    try {
      await within(before, ms, { error });
    } catch (err) {
      // Given up: the next one still waits for the one before.
      void before.then(leave);
      throw err;
    }
    return leave;
  }
}

/** The lanes of a database: a tenant always takes the same one. */
export class WriteLanes {
  private readonly lanes: WriteLane[];
  constructor(clients: readonly Sql[]) {
    this.lanes = clients.map((sql) => new WriteLane(sql));
  }

  of(key: string): WriteLane {
    // FNV-1a: the same lane for a key in every process, spread over the lanes.
    let hash = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    return this.lanes[(hash >>> 0) % this.lanes.length]!;
  }

  async end(timeoutSeconds: number): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.sql.end({ timeout: timeoutSeconds })));
  }
}
