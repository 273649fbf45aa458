// Write lanes: a tenant's creations that lock its counters (a sale's number, the events counter) queued on one
// connection instead of waiting for each other's row locks in PostgreSQL. Such a creation sends all its statements
// and its COMMIT without awaiting an answer (send-ahead.ts), so the next one can follow it on the same connection at
// once: the server runs them back to back, and no backend sleeps on a lock to be woken again. Under one account's
// concurrent sales PostgreSQL's CPU per sale went from 0.76–0.87 to 0.51–0.52 ms (docs/performance.md).
//
// A lane holds a connection reserved from the pool while it has transactions, and gives it back when it has none:
// the pool's size is still every connection the process opens. A transaction enters the lane once the one before it
// has sent its end (COMMIT or ROLLBACK), so the statements of two transactions never interleave, and nothing of a
// transaction is sent after its end. A reserved connection that closed fails every statement handed to it (the
// driver's patch, docs/decisions.md): the lane's next transaction reserves another.
// A write transaction asks for its lane explicitly (write-transaction.ts `lane`): only that transaction queues on
// it. A transaction it opens meanwhile, or work that outlives it (after-commit work, a timer), takes a connection of
// the pool, and so does a write run again (rare).
import type { ReservedSql } from 'postgres';
import { within } from '../../deadline.ts';

/** The bounds of entering a lane: the wait for the transaction before, then for a connection of the pool. */
export interface LaneEntry {
  ms: number;
  error: () => Error;
  reserve: () => Promise<ReservedSql>;
}

/** A transaction on a lane: its connection, and what it must call once its end is sent, then once it is done. */
export interface LaneTicket {
  connection: ReservedSql;
  /** Its COMMIT or ROLLBACK is sent: the lane's next transaction may send its own statements (again: no effect). */
  ended(): void;
  /** A statement of it failed because the connection ended: the lane's next transaction reserves another. */
  connectionLost(): void;
  /** Its last answer is in: the lane gives its connection back to the pool when no transaction is left on it. */
  done(): void;
}

class WriteLane {
  private tail: Promise<void> = Promise.resolve();
  private users = 0;
  private connection: ReservedSql | undefined;
  private lost = false;

  constructor(private readonly forget: () => void) {}

  async enter(entry: LaneEntry): Promise<LaneTicket> {
    this.users++;
    const before = this.tail;
    let leave!: () => void;
    this.tail = new Promise<void>((resolve) => {
      leave = resolve;
    });
    try {
      const started = Date.now();
      await within(before, entry.ms, { error: entry.error });
      if (!this.connection || this.lost) {
        const lostOne = this.connection;
        this.connection = undefined;
        this.lost = false;
        lostOne?.release();
        this.connection = await within(entry.reserve(), Math.max(1, entry.ms - (Date.now() - started)), {
          error: entry.error,
          late: (connection) => connection.release(),
        });
      }
    } catch (err) {
      // Given up: the next one still waits for the one before.
      void before.then(leave);
      this.leave();
      throw err;
    }
    const connection = this.connection;
    return {
      connection,
      ended: leave,
      connectionLost: () => {
        if (this.connection === connection) this.lost = true;
      },
      done: () => this.leave(),
    };
  }

  private leave(): void {
    if (--this.users > 0) return;
    const connection = this.connection;
    this.connection = undefined;
    connection?.release();
    this.forget();
  }
}

/** The lanes of a pool, one per tenant with transactions on it (none kept for a tenant without). */
export class WriteLanes {
  private readonly lanes = new Map<string, WriteLane>();

  enter(key: string, entry: LaneEntry): Promise<LaneTicket> {
    let lane = this.lanes.get(key);
    if (!lane) {
      const created = new WriteLane(() => {
        if (this.lanes.get(key) === created) this.lanes.delete(key);
      });
      lane = created;
      this.lanes.set(key, lane);
    }
    return lane.enter(entry);
  }
}
