// One logical replication session on PostgreSQL: a connection in replication mode streaming the slot's
// changes (START_REPLICATION … pgoutput) from a position, acknowledging what the capture has committed. A slot
// streams to one session at a time, which is what makes one instance the capturer: the others are refused
// ("replication slot … is active") and try again later. Messages: "Streaming Replication Protocol".
import type net from 'node:net';
import type postgres from 'postgres';
import { noDelaySocket } from '../../infra/db/engine/no-delay-socket.ts';
import type { CapturedTransaction, RowImage } from './captured.ts';
import { PG_EPOCH_US, PgOutputReader, positionText, readPosition } from './pgoutput.ts';
import { hasSqlState } from '../../errors/database-errors.ts';
import { SQLSTATE } from '../../errors/sqlstate.ts';

export type StreamItem = { kind: 'transaction'; transaction: CapturedTransaction } | { kind: 'caught-up'; position: number };

/** Changes of one transaction held at most while it is read: a larger one comes in parts (captured.ts). */
export const PART_CHANGES = 2_000;

export interface ReplicationOptions {
  url: string;
  slot: string;
  /** The publications streamed, comma-separated. */
  publications: string;
  originPrefix: string;
  /** Tables whose rows mark their transaction's origin (PgOutputReader). */
  marks?: ReadonlyMap<string, (row: RowImage) => string>;
  /** Settings of the replication session (Citus: its change data capture decoder). */
  settings?: Readonly<Record<string, string>>;
  /** A transaction marked with this origin before its changes has them skipped, not decoded (an import's rows). */
  skippedOrigin?: string;
  connectTimeoutSeconds: number;
}

/** A slot name from the database's name: slots are named per server, and each database needs its own. */
export const slotNameFor = (database: string): string => `balcao_${database.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);

export class ReplicationStream {
  private stream: (NodeJS.ReadableStream & NodeJS.WritableStream) | undefined;
  private statusTimer: NodeJS.Timeout | undefined;
  private acked = 0;
  private received = 0;
  /** Ends the message loop: a connection ended by close() may not end its copy stream. */
  private readonly stopped = new AbortController();
  /** Once closed, nothing starts on it again (the driver would open a new connection for a new statement). */
  private closed = false;

  private constructor(
    private readonly sql: postgres.Sql,
    private readonly sockets: Set<net.Socket>,
  ) {}

  /** Connects in replication mode (the slot made when missing, at its consistent point: answered as `created`). */
  static async connect(options: ReplicationOptions): Promise<ReplicationStream> {
    const { default: postgres } = await import('postgres');
    // Held so that close() can end the session for certain: the driver's end() leaves a socket in copy mode open
    // and unread, and the server's walsender then waits for a confirmation that never comes (a fast stop hangs).
    const sockets = new Set<net.Socket>();
    const sql = postgres(options.url, {
      max: 1,
      fetch_types: false,
      idle_timeout: 0,
      max_lifetime: null,
      connect_timeout: options.connectTimeoutSeconds,
      onnotice: () => {},
      connection: { replication: 'database', application_name: 'balcao capture', TimeZone: 'UTC', DateStyle: 'ISO', ...options.settings },
      // Not in the driver's type declarations, though it reads it (src/connection.js).
      ...({
        socket: (target: Parameters<typeof noDelaySocket>[0]) => {
          const socket = noDelaySocket(target);
          sockets.add(socket);
          socket.once('close', () => sockets.delete(socket));
          return socket;
        },
      } as object),
    });
    return new ReplicationStream(sql, sockets);
  }

  /** Makes the slot; answers its consistent point, or null when it exists already. */
  async createSlot(slot: string): Promise<number | null> {
    if (this.closed) throw new Error('the replication session is closed');
    const making = this.sql.unsafe(`CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput NOEXPORT_SNAPSHOT`);
    this.making = { cancel: () => making.cancel(), settled: making.then(noop, noop) };
    try {
      const [made] = await making;
      return lsnNumber(String(made?.consistent_point));
    } catch (err) {
      if (hasSqlState(err, SQLSTATE.duplicateObject)) return null;
      throw err;
    } finally {
      this.making = undefined;
    }
  }

  /** The slot being made: it waits for the transactions running when it started, and a closed connection does not
   *  interrupt that wait, so the server's session (and the slot, active) would outlive this one. */
  private making: { cancel(): void; settled: Promise<void> } | undefined;

  /** Streams the slot's transactions committed after `from`, then `caught-up` marks whenever the server has
   *  sent everything up to a position. Ends (or throws) when the session ends. */
  async *changes(options: ReplicationOptions, from: number): AsyncGenerator<StreamItem> {
    if (this.closed) return;
    const stream = (await this.sql
      .unsafe(
        `START_REPLICATION SLOT ${options.slot} LOGICAL ${positionText(from)} (proto_version '1', publication_names '${options.publications}', messages 'true')`,
      )
      .writable()) as unknown as NodeJS.ReadableStream & NodeJS.WritableStream;
    if (this.closed) {
      (stream as unknown as { destroy(): void }).destroy();
      return;
    }
    this.stream = stream;
    this.acked = from;
    this.received = from;
    const reader = new PgOutputReader(options.originPrefix, options.skippedOrigin, options.marks, PART_CHANGES);
    // The server ends a session that says nothing for wal_sender_timeout (60 s by default).
    this.statusTimer = setInterval(() => this.sendStatus(false), 5_000);
    this.statusTimer.unref();
    let open = false;
    for await (const chunk of messagesOf(stream, this.stopped.signal)) {
      if (chunk[0] === 0x77) {
        // XLogData: start, WAL end, send time, then one pgoutput message
        const message = chunk.subarray(25);
        if (message[0] === 0x42) open = true;
        const transaction = reader.read(message);
        if (transaction?.part) yield { kind: 'transaction', transaction };
        else if (transaction) {
          open = false;
          this.received = Math.max(this.received, transaction.position);
          yield { kind: 'transaction', transaction };
        }
      } else if (chunk[0] === 0x6b) {
        // Keepalive: the server has sent everything before its WAL end; a transaction open here commits after it.
        const end = readPosition(chunk, 1);
        if (!open && end > this.received) {
          this.received = end;
          yield { kind: 'caught-up', position: end };
        }
        if (chunk[17]) this.sendStatus(false);
      }
    }
  }

  /** Tells the server that everything up to `position` is captured: the slot may let go of the WAL before it. */
  acknowledge(position: number): void {
    if (position <= this.acked) return;
    this.acked = position;
    this.sendStatus(false);
  }

  private sendStatus(replyRequested: boolean): void {
    const stream = this.stream;
    if (!stream) return;
    const message = Buffer.alloc(34);
    message[0] = 0x72; // r: standby status update
    writePosition(message, 1, this.received);
    writePosition(message, 9, this.acked);
    writePosition(message, 17, this.acked);
    message.writeBigInt64BE(BigInt(Date.now() * 1000 - PG_EPOCH_US), 25);
    message[33] = replyRequested ? 1 : 0;
    try {
      stream.write(message);
    } catch {
      // the session is ending; the next one starts from the slot's acknowledged position
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const making = this.making;
    if (making) {
      // Cancelled, it ends at once and the unfinished slot goes with it; its answer (the cancellation) is awaited,
      // boundedly, so that the database is free of it when close() returns.
      making.cancel();
      await Promise.race([making.settled, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    }
    clearInterval(this.statusTimer);
    this.stopped.abort();
    (this.stream as unknown as { destroy?(): void } | undefined)?.destroy?.();
    this.stream = undefined;
    await this.sql.end({ timeout: 0 }).catch(() => {});
    for (const socket of this.sockets) socket.destroy();
  }
}

const noop = (): void => {};

function writePosition(buf: Buffer, at: number, position: number): void {
  buf.writeUInt32BE(Math.floor(position / 2 ** 32), at);
  buf.writeUInt32BE(position % 2 ** 32, at + 4);
}

/** `16/B374D848` as a number. */
export function lsnNumber(text: string): number {
  const [hi, lo] = text.split('/');
  return Number.parseInt(hi ?? '0', 16) * 2 ** 32 + Number.parseInt(lo ?? '0', 16);
}

/** Each CopyData message of the session as one buffer. Read in flowing mode: a paused stream's read() would join
 *  the buffered messages into one, and the protocol's messages carry no length of their own. The stream is paused
 *  while many messages wait, so a backlog is read no faster than it is consumed. */
async function* messagesOf(stream: NodeJS.ReadableStream, stopped: AbortSignal): AsyncGenerator<Buffer> {
  const queue: Buffer[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: unknown;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  stream.on('data', (chunk: Buffer) => {
    queue.push(chunk);
    if (queue.length >= 4096) stream.pause();
    notify();
  });
  stream.on('end', () => {
    ended = true;
    notify();
  });
  stream.on('close', () => {
    ended = true;
    notify();
  });
  stream.on('error', (err) => {
    failure = err;
    notify();
  });
  stopped.addEventListener('abort', () => {
    ended = true;
    notify();
  });
  while (!stopped.aborted) {
    const next = queue.shift();
    if (next) {
      if (queue.length < 1024 && stream.isPaused()) stream.resume();
      yield next;
      continue;
    }
    if (failure) throw failure;
    if (ended) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}
