// The NOTIFYs that wake long polls and delivery workers, sent after the writes commit, not inside them.
// A NOTIFY in a transaction takes a lock that PostgreSQL holds, for the whole cluster, from just before
// that transaction's commit until after it: every writing transaction that notifies commits one at a
// time, behind the others' commit records (async.c, PreCommit_Notify). Sent here instead, the writes
// commit side by side, and the tenants whose events committed within GATHER_MS (5 ms) of each other share one
// statement; while it runs, later ones wait for the next. A NOTIFY is only a wake-up: the waiter reads
// the events itself, so one per tenant per batch wakes it as well as one per event. If this process stops
// between a commit and its NOTIFY, a long poll elsewhere answers at its deadline instead, and the worker
// finds the delivery on its next timed cycle (docs/events.md).
import { sql } from 'kysely';
import type { Db } from '../infra/db/database.ts';
import { DELIVERIES_CHANNEL, EVENTS_CHANNEL } from './channels.ts';

/** Where a failed NOTIFY is reported: nothing is retried, the waiters' own deadlines and timers cover it. */
export type NotifyFailure = (err: unknown) => void;

/** Tenants per statement: a burst of many tenants goes out in several. */
const MAX_PER_STATEMENT = 100;

/**
 * How long the commits after the first gather before their NOTIFY leaves: a wake-up comes at most this much
 * later, and a busy process sends one NOTIFY statement (a transaction of its own) per window, not one per write.
 */
export const GATHER_MS = 5;

export class CommitNotifier {
  private readonly tenants = new Set<string>();
  private deliveries = false;
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly failed: NotifyFailure = () => {},
  ) {}

  /** A write of `tenantKey` committed an event (and queued webhook deliveries when `deliveries`). */
  committed(tenantKey: string, deliveries: boolean): void {
    this.tenants.add(tenantKey);
    this.deliveries ||= deliveries;
    this.schedule();
  }

  /** Sends what is pending once the window has passed (after the statement in flight, if one is). */
  private schedule(): void {
    if (this.timer || this.sending || !this.pending()) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.send();
    }, GATHER_MS);
  }

  private pending(): boolean {
    return this.tenants.size > 0 || this.deliveries;
  }

  /** Sends what is pending; what becomes pending meanwhile waits for the next window. */
  private send(): void {
    if (this.sending || !this.pending()) return;
    const tenants = [...this.tenants].slice(0, MAX_PER_STATEMENT);
    for (const tenant of tenants) this.tenants.delete(tenant);
    const deliveries = this.deliveries && this.tenants.size === 0;
    if (deliveries) this.deliveries = false;
    const notifies = [
      ...tenants.map((tenant) => sql`pg_notify(${EVENTS_CHANNEL}, ${tenant})`),
      ...(deliveries ? [sql`pg_notify(${DELIVERIES_CHANNEL}, '')`] : []),
    ];
    // A NOTIFY commits a transaction of its own: it need not wait for the WAL to reach the disk (the
    // notification is delivered at commit, and never survives a crash anyway), so it takes no flush.
    this.sending = sql`SELECT set_config('synchronous_commit', 'off', true), ${sql.join(notifies)}`
      .execute(this.db)
      .then(
        () => undefined,
        (err: unknown) => this.failed(err),
      )
      .finally(() => {
        this.sending = undefined;
        this.schedule();
      });
  }

  /** Resolves once every NOTIFY asked for so far has been sent (a stopping server, before its database closes). */
  async flushed(): Promise<void> {
    while (this.sending || this.pending()) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      this.send();
      await this.sending;
    }
  }
}
