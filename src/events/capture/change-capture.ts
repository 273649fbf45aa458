// The capture: committed changes of the served tables → events, in commit order, exactly once. One capturer
// per database at a time; every instance serves the feed. Two sources, one way of recording:
// - PostgreSQL: a logical replication slot streamed by whichever instance holds it (replication-stream.ts).
//   Its changes come from the WAL, so every writer's commits reach the feed: Balcão's, psql's, another
//   application's. A killed capturer releases the slot with its connection; another instance (or the same one
//   restarted) takes it within a second and starts from the last committed position.
// - The embedded database: the change log the triggers fill (capture_outbox), read after each commit.
// Each batch of transactions commits its events together with the new position, moved by compare-and-set from
// the one read: a batch captured twice (an old capturer not yet aware that another took over) fails instead.
import { sql } from 'kysely';
import type { Db } from '../../infra/db/engine/database.ts';
import { within } from '../../infra/deadline.ts';
import { type WriteTransaction, writeTransaction } from '../../infra/db/statements/write-transaction.ts';
import type { CapturedTransaction } from './captured.ts';
import { eventsOf } from './change-events.ts';
import { CaptureOvertaken, movePosition } from './capture-position.ts';
import { CapturedAlready, PartedCapture } from './parted-capture.ts';
import { EventClock, latestEventUs, type Recorded, recordEvents } from './record-events.ts';
import { type ReplicationOptions, ReplicationStream, slotNameFor } from './replication-stream.ts';
import { IMPORT_ORIGIN, ORIGIN_PREFIX, PUBLICATION } from './setup.ts';

export type CaptureState = 'starting' | 'capturing' | 'standby' | 'lost' | 'misconfigured' | 'failing' | 'stopped';

export interface CaptureStatus {
  state: CaptureState;
  /** Bytes of WAL the slot holds that capture has not yet confirmed (PostgreSQL; null when unknown). */
  lagBytes: number | null;
  /** How far behind the captured changes are, in seconds (0 when caught up). */
  lagSeconds: number;
  /** Why capture does not run, when it does not. */
  reason?: string;
}

export interface CaptureLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface ChangeCapture {
  start(): Promise<void>;
  close(): Promise<void>;
  /** A write through this process committed: at `position` (PostgreSQL: the WAL position after its commit). */
  written(tenantKey: string, position: number): void;
  /** Resolves once the writes this process noted for the tenant are events (or after a bounded wait). */
  caughtUp(tenantKey: string): Promise<void>;
  status(): Promise<CaptureStatus>;
  /** Events recorded by this process so far. */
  readonly recorded: number;
}

/** How long a feed read waits for its tenant's last write to become events before it answers anyway. */
export const CAUGHT_UP_WAIT_MS = 2_000;
/** How long a stop waits for the embedded capture in progress; what it leaves stays in the log for the next start. */
const CLOSE_WAIT_MS = 10_000;
/** Changes per capture transaction (a larger transaction of the source is never split). */
const BATCH_CHANGES = 2_000;
/**
 * A batch starts at least this long after the one before, so that under steady writes each gathers the changes of
 * several transactions: every batch is a transaction with its own statements, commit, NOTIFY and acknowledgement,
 * which one-change batches paid for each change. After a quiet spell the first change is captured at once.
 */
const GATHER_MS = 10;
/**
 * How long a capture batch may take before its session is given up: 10 s, and 1 ms more per change (a 100 000-row
 * UPDATE is one batch). A batch whose database went away can wait on its connection for ever, while PostgreSQL's
 * fast stop waits for this session to confirm what it was sent: a deadlock only ending the session breaks. The
 * slot keeps its place, and a batch that commits after all moves the position, which the next session reads.
 * The bound doubles after each batch it ends (up to 8 times), so a batch that is only slow gets through.
 */
const batchDeadlineMs = (changes: number, givenUp: number): number => (10_000 + changes) * 2 ** Math.min(givenUp, 3);

/** A capture batch: its events, with the new position compared and set. */
async function captureBatch(
  db: Db,
  source: string,
  from: number,
  transactions: readonly CapturedTransaction[],
  clock: EventClock,
  also?: (tx: WriteTransaction, to: number) => Promise<unknown>,
): Promise<Recorded & { position: number }> {
  const to = transactions.reduce((max, t) => Math.max(max, t.position), from);
  // Two round trips whatever the batch: the reads that make the events' objects (their answers awaited with the
  // position's move, sent ahead of them), then every write and the COMMIT (sent ahead: record-events.ts).
  const recording = await writeTransaction(db, {}, async (tx) => {
    await tx.sendAhead(sql`SET LOCAL statement_timeout = 0`.compile(tx.db));
    // Moved from where this capturer left it, or not at all: another capturer took over meanwhile.
    await movePosition(tx, source, from, to);
    const recording = await recordEvents(tx, await eventsOf(tx.db, transactions), clock);
    await also?.(tx, to);
    return recording;
  });
  return { ...(await recording.recorded), position: to };
}

/** The server's WAL insert position: past the commit of every transaction answered so far (the written position
 *  is not, under `synchronous_commit = off`). */
export async function walInsertPosition(db: Db): Promise<number> {
  const { rows } = await sql<{ at: string }>`SELECT (pg_current_wal_insert_lsn() - '0/0')::text AS at`.execute(db);
  return Number(rows[0]?.at ?? 0);
}

/** How far the slot's consumer has acknowledged (its confirmed position), or undefined when there is no such slot. */
export async function slotConfirmed(db: Db, slot: string): Promise<number | undefined> {
  const { rows } = await sql<{
    at: string | null;
  }>`SELECT (confirmed_flush_lsn - '0/0')::text AS at FROM pg_replication_slots WHERE slot_name = ${slot}`.execute(db);
  return rows[0]?.at == null ? undefined : Number(rows[0].at);
}

async function readPosition(db: Db, source: string): Promise<number | undefined> {
  const { rows } = await sql<{
    position: string;
  }>`SELECT position::text AS position FROM capture_progress WHERE source = ${source}`.execute(db);
  return rows[0] ? Number(rows[0].position) : undefined;
}

/** Waiters for a position to be captured. */
class PositionWaiters {
  private waiters: { position: number; resolve: () => void }[] = [];
  reached(position: number): void {
    const still: typeof this.waiters = [];
    for (const w of this.waiters) (w.position <= position ? w.resolve : () => still.push(w))();
    this.waiters = still;
  }
  wait(position: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push({
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
  releaseAll(): void {
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }
}

export interface LogicalCaptureOptions {
  /** A direct (session) connection: replication does not pass a transaction-pooling PgBouncer. */
  url: string;
  log: CaptureLog;
  /** How often an instance that does not hold the slot tries to take it. */
  retryMs?: number;
  /** The server whose WAL is decoded, when it is not the one events are written to (a Citus worker): its slot,
   *  settings and positions are read there. */
  node?: { db: Db; name: string };
  /** Publications streamed besides the served tables' (Citus: the origin marks'). */
  publications?: readonly string[];
  /** Tables whose rows mark their transaction's origin (Citus). */
  marks?: ReplicationOptions['marks'];
  /** Settings of the replication session. */
  settings?: ReplicationOptions['settings'];
  /** Captures only while this holds, else stands by (Citus: a worker's slot is streamed by the instance that
   *  streams the coordinator's, so one instance captures the whole cluster). */
  follows?: () => boolean;
}

/** PostgreSQL: the slot's stream, held by one instance at a time. */
export class LogicalCapture implements ChangeCapture {
  private closed = false;
  private state: CaptureState = 'starting';
  private reason: string | undefined;
  private slot = '';
  private stream: ReplicationStream | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** Everything committed up to here is events (what this process knows). */
  private capturedThrough = 0;
  private lastCommitUs = 0;
  private behind = false;
  /** Batches ended by their deadline since the last that committed (batchDeadlineMs). */
  private batchesGivenUp = 0;
  private readonly noted = new Map<string, number>();
  private readonly waiters = new PositionWaiters();
  /** Where the slot is: the database events are written to, or the Citus node whose WAL is decoded. */
  private readonly nodeDb: Db;
  /** The name of this capture's position (capture_progress.source): the slot's, and the node's on Citus. */
  private source = '';
  recorded = 0;

  constructor(
    private readonly db: Db,
    private readonly options: LogicalCaptureOptions,
  ) {
    this.nodeDb = options.node?.db ?? db;
  }

  /** Resolves once the slot is there (made on first use) or capture said why it cannot run, within 45 s: changes
   *  committed after that are captured, so a server that listens only then loses none of its own writes. Making the
   *  slot waits for the write transactions running at that moment to end. */
  async start(): Promise<void> {
    let settled: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      settled = resolve;
    });
    this.firstSettled = settled;
    this.loop = this.run();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([first, new Promise((resolve) => (timer = setTimeout(resolve, 45_000)))]);
    clearTimeout(timer);
  }

  private firstSettled: () => void = () => {};

  private async run(): Promise<void> {
    let failures = 0;
    try {
      const { rows } = await sql<{ db: string }>`SELECT current_database() AS db`.execute(this.db);
      this.slot = slotNameFor(rows[0]?.db ?? 'balcao');
      this.source = this.options.node ? `${this.slot}@${this.options.node.name}` : this.slot;
    } catch (err) {
      this.setState('failing', String((err as Error).message));
    }
    while (!this.closed) {
      try {
        await this.session();
        failures = 0;
      } catch (err) {
        if (this.closed) break;
        failures += 1;
        this.firstSettled();
        const busy = /is active for PID/i.test(String((err as Error).message));
        if (busy) this.setState('standby');
        else if (!(err instanceof CaptureOvertaken)) {
          this.setState(this.state === 'lost' || this.state === 'misconfigured' ? this.state : 'failing', String((err as Error).message));
          if (failures === 1 || failures % 60 === 0) this.options.log.error({ err, slot: this.slot }, 'change capture failed; retrying');
        }
      } finally {
        await this.stream?.close();
        this.stream = undefined;
      }
      if (!this.closed)
        await this.pause(this.state === 'lost' || this.state === 'misconfigured' ? 10_000 : (this.options.retryMs ?? 1_000));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms + Math.floor(Math.random() * 200));
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private setState(state: CaptureState, reason?: string): void {
    if (state !== this.state && (state === 'lost' || state === 'misconfigured'))
      this.options.log.error({ slot: this.slot, reason }, `change capture ${state}: ${reason}`);
    else if (state === 'capturing' && this.state !== 'capturing')
      this.options.log.info({ slot: this.slot }, 'change capture: this instance captures');
    this.state = state;
    this.reason = reason;
  }

  /** One replication session: the slot checked (made on first use), then its stream captured until it ends. */
  private async session(): Promise<void> {
    if (this.options.follows && !this.options.follows()) {
      this.firstSettled();
      this.setState('standby');
      return;
    }
    const { rows: settings } = await sql<{ wal_level: string }>`SELECT current_setting('wal_level') AS wal_level`.execute(this.nodeDb);
    if (settings[0]?.wal_level !== 'logical') {
      this.firstSettled();
      this.setState(
        'misconfigured',
        `PostgreSQL's wal_level is '${settings[0]?.wal_level}'; capture needs 'logical' (ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL)`,
      );
      return;
    }
    const { rows: slots } = await sql<{ wal_status: string | null }>`SELECT wal_status FROM pg_replication_slots
      WHERE slot_name = ${this.slot} AND database = current_database()`.execute(this.nodeDb);
    let position = await readPosition(this.db, this.source);
    if (this.closed) return;
    this.stream = await ReplicationStream.connect(this.replication());
    if (slots.length === 0) {
      if (position !== undefined) {
        this.setState(
          'lost',
          `the replication slot ${this.slot} is gone: changes since position ${position} cannot be captured (docs/operations.md, "Change capture")`,
        );
        return;
      }
      const made = await this.stream.createSlot(this.slot);
      if (made !== null)
        await sql`INSERT INTO capture_progress (source, position) VALUES (${this.source}, ${made}) ON CONFLICT (source) DO NOTHING`.execute(
          this.db,
        );
      position = await readPosition(this.db, this.source);
    } else if (slots[0]?.wal_status === 'lost') {
      this.firstSettled();
      this.setState('lost', `PostgreSQL removed WAL the replication slot ${this.slot} still needed (max_slot_wal_keep_size)`);
      return;
    }
    if (position === undefined) {
      // The slot was made by a capturer that stopped before recording where it starts: start where the slot is.
      await sql`INSERT INTO capture_progress (source, position) VALUES (${this.source}, ${(await slotConfirmed(this.nodeDb, this.slot)) ?? 0}) ON CONFLICT (source) DO NOTHING`.execute(
        this.db,
      );
      position = (await readPosition(this.db, this.source)) ?? 0;
    }
    // From here on the slot keeps every change: the server may take writes.
    this.holding = true;
    this.firstSettled();
    if (this.closed) return;
    try {
      await this.capture(this.stream, position);
    } finally {
      this.holding = false;
    }
  }

  /** This instance streams (or is about to stream) the slot. */
  holding = false;

  /** Ends the session now (the slot is let go); the next one starts after the usual pause. */
  release(): void {
    void this.stream?.close();
  }

  private async capture(stream: ReplicationStream, from: number): Promise<void> {
    const clock = new EventClock();
    clock.startAfter(await latestEventUs(this.db));
    let position = from;
    const pending: CapturedTransaction[] = [];
    let pendingChanges = 0;
    /** The server had sent everything before this when it last said so. */
    let mark = 0;
    let draining: Promise<void> | undefined;
    let failure: unknown;
    let lastBatchAt = Number.NEGATIVE_INFINITY;
    // Batches commit one after another while the stream goes on being read.
    const drain = (): Promise<void> => {
      if (draining) return draining;
      draining = (async () => {
        // A turn first: the assignment above completes before the finally below can clear it.
        await Promise.resolve();
        try {
          while (pending.length > 0 || mark > this.capturedThrough) {
            const gathering = lastBatchAt + GATHER_MS - performance.now();
            if (pending.length > 0 && pendingChanges < BATCH_CHANGES && gathering > 0)
              await new Promise((resolve) => setTimeout(resolve, gathering));
            let take = 0;
            let changes = 0;
            while (take < pending.length && (take === 0 || changes + (pending[take]?.changes.length ?? 0) <= BATCH_CHANGES))
              changes += pending[take++]?.changes.length ?? 0;
            const batch = pending.splice(0, take);
            pendingChanges -= changes;
            if (batch.length > 0) {
              lastBatchAt = performance.now();
              const done = await this.bounded(
                captureBatch(this.db, this.source, position, batch, clock),
                changes,
                `a capture batch of ${changes} changes`,
              );
              this.batchesGivenUp = 0;
              position = done.position;
              this.recorded += done.events;
              this.lastCommitUs = batch[batch.length - 1]?.committedAtUs ?? this.lastCommitUs;
            }
            const through = pending.length === 0 ? Math.max(position, mark) : position;
            stream.acknowledge(through);
            this.advance(through);
          }
        } catch (err) {
          failure = err;
          // The session ends now, not at the next message: PostgreSQL's fast stop waits for this session to
          // confirm what it was sent, which a capture that cannot record will never do. The slot keeps its place.
          void stream.close();
        } finally {
          draining = undefined;
        }
      })();
      return draining;
    };
    /** The large transaction being captured part by part, if any. */
    let parted: PartedCapture | undefined;
    try {
      for await (const item of stream.changes(this.replication(), from)) {
        if (this.closed) break;
        if (failure) throw failure;
        if (this.state !== 'capturing') this.setState('capturing');
        if (item.kind === 'caught-up') {
          mark = Math.max(mark, item.position);
          this.behind = pending.length > 0;
          void drain();
          continue;
        }
        const { transaction } = item;
        if (transaction.part || transaction.parted) {
          // Too large to hold at once: captured part by part (parted-capture.ts), after everything before it.
          this.behind = true;
          if (!parted) {
            while (!failure && (draining || pending.length > 0)) await drain();
            if (failure) throw failure;
            parted = new PartedCapture(this.db, this.source, position, clock);
          }
          const capturing = parted;
          const captured = await this.bounded(
            capturing.add(transaction).then(() => (transaction.part ? undefined : capturing.done)),
            transaction.changes.length,
            'a part of a large transaction',
          ).catch((err: unknown) => {
            if (err instanceof CapturedAlready) return undefined;
            throw err;
          });
          if (transaction.part) continue;
          parted = undefined;
          this.batchesGivenUp = 0;
          if (captured) {
            position = captured.position;
            this.recorded += captured.events;
            this.lastCommitUs = transaction.committedAtUs;
          }
          stream.acknowledge(position);
          this.advance(position);
          continue;
        }
        if (transaction.position <= from) continue;
        this.behind = true;
        pending.push(transaction);
        pendingChanges += transaction.changes.length;
        // The stream is held while several batches wait, so a backlog is read no faster than it is captured.
        if (pendingChanges >= 4 * BATCH_CHANGES) await drain();
        else void drain();
      }
    } finally {
      // A session that ends within a large transaction rolls its capture back: the next one streams it again.
      parted?.abandon();
    }
    await draining;
    if (failure) throw failure;
  }

  /** `work` (a batch, or a part of a large transaction, of `changes` changes) within its deadline (batchDeadlineMs);
   *  past it the session starts again, and the next deadline is longer. */
  private bounded<T>(work: Promise<T>, changes: number, what: string): Promise<T> {
    return within(work, batchDeadlineMs(changes, this.batchesGivenUp), {
      error: () => {
        this.batchesGivenUp += 1;
        return new Error(`${what} did not end in time; its session starts again`);
      },
    });
  }

  private replication(): ReplicationOptions {
    return {
      url: this.options.url,
      slot: this.slot,
      publications: [PUBLICATION, ...(this.options.publications ?? [])].join(','),
      originPrefix: ORIGIN_PREFIX,
      skippedOrigin: IMPORT_ORIGIN,
      connectTimeoutSeconds: 5,
      ...(this.options.marks ? { marks: this.options.marks } : {}),
      ...(this.options.settings ? { settings: this.options.settings } : {}),
    };
  }

  private advance(position: number): void {
    if (position <= this.capturedThrough) return;
    this.capturedThrough = position;
    this.waiters.reached(position);
  }

  written(tenantKey: string, position: number): void {
    if (position <= 0) return;
    this.noted.delete(tenantKey);
    this.noted.set(tenantKey, Math.max(position, this.noted.get(tenantKey) ?? 0));
    if (this.noted.size > 10_000) for (const key of this.noted.keys()) if (this.noted.size > 5_000) this.noted.delete(key);
  }

  async caughtUp(tenantKey: string): Promise<void> {
    const position = this.noted.get(tenantKey);
    if (position === undefined || position <= this.capturedThrough) return;
    if (this.state === 'capturing' || this.state === 'starting') return this.waiters.wait(position, CAUGHT_UP_WAIT_MS);
    if (this.state !== 'standby') return;
    // Another instance captures: the slot's confirmed position says how far it got.
    const deadline = Date.now() + CAUGHT_UP_WAIT_MS;
    while (Date.now() < deadline && !this.closed) {
      const at = (await slotConfirmed(this.nodeDb, this.slot)) ?? 0;
      if (at >= position) {
        this.advance(at);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async status(): Promise<CaptureStatus> {
    let lagBytes: number | null = null;
    let sinceProgress = 0;
    let active = false;
    try {
      const { rows } = await sql<{ bytes: string | null; active: boolean }>`
        SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::bigint::text AS bytes, s.active
        FROM pg_replication_slots s WHERE s.slot_name = ${this.slot}`.execute(this.nodeDb);
      const { rows: progress } = await sql<{ since: string | null }>`
        SELECT extract(epoch from now() - updated_at)::text AS since FROM capture_progress WHERE source = ${this.source}`.execute(this.db);
      lagBytes = rows[0]?.bytes == null ? null : Math.max(0, Number(rows[0].bytes));
      active = Boolean(rows[0]?.active);
      sinceProgress = Number(progress[0]?.since ?? 0);
    } catch {
      // unknown: reported as null
    }
    let lagSeconds = 0;
    if (this.state === 'capturing')
      lagSeconds = this.behind && this.lastCommitUs > 0 ? Math.max(0, Date.now() / 1000 - this.lastCommitUs / 1e6) : 0;
    else if (!active && (lagBytes ?? 0) > 0) lagSeconds = sinceProgress;
    return {
      state: this.state,
      lagBytes,
      lagSeconds,
      ...(this.reason && this.state !== 'capturing' && this.state !== 'standby' ? { reason: this.reason } : {}),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    this.waiters.releaseAll();
    await this.stream?.close();
    await this.loop;
    // A session the loop opened meanwhile is closed too.
    await this.stream?.close();
    this.state = 'stopped';
  }
}

/** The embedded database: the triggers' change log, captured after each commit (and once a second). */
export class OutboxCapture implements ChangeCapture {
  private static readonly SOURCE = 'outbox';
  private position = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly clock = new EventClock();
  private failing: string | undefined;
  recorded = 0;

  constructor(
    private readonly db: Db,
    private readonly log: CaptureLog,
    private readonly everyMs = 1_000,
  ) {}

  async start(): Promise<void> {
    await sql`INSERT INTO capture_progress (source, position) VALUES (${OutboxCapture.SOURCE}, 0) ON CONFLICT (source) DO NOTHING`.execute(
      this.db,
    );
    this.position = (await readPosition(this.db, OutboxCapture.SOURCE)) ?? 0;
    this.clock.startAfter(await latestEventUs(this.db));
    this.timer = setInterval(() => this.kick(), this.everyMs);
    this.timer.unref();
    await this.kick();
  }

  /** Captures what the log holds now; a kick while a capture runs makes it look once more. */
  kick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          while (await this.captureSome());
        } while (this.again && !this.closed);
        this.failing = undefined;
      } catch (err) {
        if (!this.failing) this.log.error({ err }, 'change capture failed; retrying');
        this.failing = String((err as Error).message);
        this.position = (await readPosition(this.db, OutboxCapture.SOURCE).catch(() => this.position)) ?? this.position;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** One batch of the log's transactions; false when there was none. */
  private async captureSome(): Promise<boolean> {
    const { rows } = await sql<{
      seq: number;
      txid: number;
      table_name: string;
      op: string;
      old_row: unknown;
      new_row: unknown;
      at_us: number;
    }>`
      SELECT seq, txid, table_name, op, old_row, new_row, (extract(epoch from at) * 1000000)::bigint AS at_us
      FROM capture_outbox WHERE seq > ${this.position} ORDER BY seq LIMIT ${BATCH_CHANGES + 1}`.execute(this.db);
    if (rows.length === 0) return false;
    let list = rows;
    const last = rows[rows.length - 1];
    if (rows.length > BATCH_CHANGES && last) {
      // The last transaction may go on past the page: leave it for the next batch, unless it is the only one.
      const trimmed = rows.filter((r) => r.txid !== last.txid);
      list =
        trimmed.length > 0
          ? trimmed
          : (
              await sql<
                (typeof rows)[number]
              >`SELECT seq, txid, table_name, op, old_row, new_row, (extract(epoch from at) * 1000000)::bigint AS at_us
              FROM capture_outbox WHERE txid = ${last.txid} AND seq > ${this.position} ORDER BY seq`.execute(this.db)
            ).rows;
    }
    const transactions: CapturedTransaction[] = [];
    for (const row of list) {
      let t = transactions[transactions.length - 1];
      if (!t || (t as CapturedTransaction & { txid?: number }).txid !== row.txid) {
        t = Object.assign({ images: 'json', position: 0, committedAtUs: 0, origin: null, changes: [] } as CapturedTransaction, {
          txid: row.txid,
        });
        transactions.push(t);
      }
      t.position = Number(row.seq);
      t.committedAtUs = Math.max(t.committedAtUs, Number(row.at_us));
      if (row.op === 'origin') t.origin = String(row.new_row);
      else
        t.changes.push({
          table: row.table_name,
          op: row.op as 'insert' | 'update' | 'delete',
          old: (row.old_row as Record<string, unknown> | null) ?? null,
          new: (row.new_row as Record<string, unknown> | null) ?? null,
        });
    }
    const done = await captureBatch(this.db, OutboxCapture.SOURCE, this.position, transactions, this.clock, (tx, to) =>
      tx.sendAhead(sql`DELETE FROM capture_outbox WHERE seq <= ${to}`.compile(tx.db)),
    );
    this.position = done.position;
    this.recorded += done.events;
    return true;
  }

  written(): void {
    void this.kick();
  }

  /** Waits for the capture in progress (and the ones a write started meanwhile), at most `withinMs`: a read that
   *  follows a write sees it, and no reader waits on a capture that is stuck. */
  async caughtUp(_tenantKey?: string, withinMs = CAUGHT_UP_WAIT_MS): Promise<void> {
    const deadline = Date.now() + withinMs;
    while (this.running && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.running, new Promise((resolve) => (timer = setTimeout(resolve, deadline - Date.now())))]);
      clearTimeout(timer);
    }
  }

  async status(): Promise<CaptureStatus> {
    const { rows } = await sql<{ n: number; oldest: number | null }>`
      SELECT count(*)::int AS n, extract(epoch from now() - min(at))::float8 AS oldest FROM capture_outbox`.execute(this.db);
    const waiting = rows[0]?.n ?? 0;
    return {
      state: this.closed ? 'stopped' : this.failing ? 'failing' : 'capturing',
      lagBytes: null,
      lagSeconds: waiting > 0 ? Number(rows[0]?.oldest ?? 0) : 0,
      ...(this.failing ? { reason: this.failing } : {}),
    };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.caughtUp(undefined, CLOSE_WAIT_MS);
    this.closed = true;
  }
}
