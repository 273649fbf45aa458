// The NOTIFYs that wake long polls and delivery workers, sent after the writes commit, not inside them.
// A NOTIFY in a transaction takes a lock that PostgreSQL holds, for the whole cluster, from just before
// that transaction's commit until after it: every writing transaction that notifies commits one at a
// time, behind the others' commit records (async.c, PreCommit_Notify). Sent here instead, the writes
// commit side by side, and the tenants whose events committed in the same turn of the event loop share
// one statement; while it runs, later ones wait for the next. A NOTIFY is only a wake-up: the waiter reads
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

export class CommitNotifier {
  private readonly tenants = new Set<string>();
  private deliveries = false;
  private scheduled = false;
  private sending: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly failed: NotifyFailure = () => {},
  ) {}

  /** A write of `tenantKey` committed an event (and queued webhook deliveries when `deliveries`). */
  committed(tenantKey: string, deliveries: boolean): void {
    this.tenants.add(tenantKey);
    this.deliveries ||= deliveries;
    if (this.scheduled || this.sending) return;
    this.scheduled = true;
    // Commits answered in this turn of the event loop go out together.
    setImmediate(() => {
      this.scheduled = false;
      this.send();
    });
  }

  /** Sends what is pending, then anything that became pending meanwhile. */
  private send(): void {
    if (this.sending || (this.tenants.size === 0 && !this.deliveries)) return;
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
        this.send();
      });
  }

  /** Resolves once every NOTIFY asked for so far has been sent (a stopping server, before its database closes). */
  async flushed(): Promise<void> {
    while (this.scheduled || this.sending || this.tenants.size > 0 || this.deliveries) {
      if (!this.sending && !this.scheduled) this.send();
      await (this.sending ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }
}
