// Kysely over postgres.js, tuned for the request path: every query runs as a named prepared
// statement (parsed and planned once per connection, then only bound and executed), and a
// connection is taken from the pool for the whole of a transaction only; a lone query uses
// the pool directly instead of reserving a connection around it. Inside a transaction, BEGIN and
// statements sent ahead (send-ahead.ts) go out without waiting: they travel with the next one. A write
// transaction (write-transaction.ts) asks for its lane and its commit position through `beginWrite`.
// Every wait is bounded (docs/operations.md): postgres.js `reserve()` queues without a deadline and can
// wait for ever after a server-side disconnect, and a lone query waits in the pool's queue without one;
// past `acquireMs` / `queryMs` they fail with a timeout the HTTP layer answers as 503.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { ReservedSql, Sql } from 'postgres';
import { type CommitPosition, lsnToNumber, noteCommit } from '../statements/commit-lsn.ts';
import { quoteIdentifier } from './identifiers.ts';
import type { DeferredStatement } from '../statements/send-ahead.ts';
import type { LaneTicket, WriteLanes } from '../statements/write-lanes.ts';
import type { WriteConnection, WriteTransactionOptions } from '../statements/write-transaction.ts';
import { within } from '../../deadline.ts';

/**
 * Above this many parameters a query is a bulk load (import), whose text varies with its row
 * count and whose parse cost is spread over many rows: it is not worth a cached statement.
 */
const MAX_PREPARED_PARAMETERS = 1000;

/**
 * postgres.js holds a message under 1 KiB until the event loop's check phase (setImmediate) so that
 * small messages share a write; under load that is after every other ready socket's callback. A
 * COMMIT waiting there keeps the transaction's row locks (a tenant's counters) held for that long.
 * Sent unprepared with its text padded past 1 KiB, it is written at once, with whatever is buffered.
 */
const IMMEDIATE_COMMIT = `commit /*${' '.repeat(1024)}*/`;

/**
 * Sent with every BEGIN on prepared statements: a statement of a transaction (a write's) runs on the generic plan
 * its connection made once. Left to choose, PostgreSQL planned a new sale's statement again at about one execution
 * in three, each time for 1.4 ms of CPU, more than the rest of the sale (docs/performance.md). A write's statements
 * find their rows by key or by tenant, which a generic plan does as well; the reads outside transactions (lists
 * with filters) keep the custom plans a value can improve. Not on Citus (CITUS_INSTALLED).
 */
const GENERIC_PLANS = '; set local plan_cache_mode = force_generic_plan';

/** Citus makes no generic plan of a statement that reads a distributed table ("could not create distributed plan"):
 *  on a Citus coordinator the transactions leave PostgreSQL to choose (docs/scale-out.md). */
const CITUS_INSTALLED = "select exists (select 1 from pg_extension where extname = 'citus') as citus";

/** Read after a COMMIT on the same connection: the WAL insert position, at or past the commit record's end. */
const COMMIT_POSITION = 'select pg_current_wal_insert_lsn()::text as lsn';
/** The same, padded like IMMEDIATE_COMMIT: sent right behind a plain COMMIT, it writes both (and the transaction's
 *  statements still held) at once, in one write where a padded COMMIT and the position took two. */
const POSITION_BEHIND_COMMIT = `${COMMIT_POSITION} /*${' '.repeat(1024)}*/`;

/** Client-side bounds of the waits the driver leaves open (0: none). */
export interface WaitBounds {
  /** For a connection of a transaction. */
  acquireMs: number;
  /** For a query outside a transaction: its wait in the pool queue and its run. */
  queryMs: number;
}

/** A wait on the pool that ran out of time (mapped to 503 service_unavailable). */
export class AcquireTimeoutError extends Error {
  readonly code = 'ACQUIRE_TIMEOUT';
  constructor(what: string, ms: number) {
    super(`no ${what} within ${ms} ms`);
  }
}

/** A transaction-pooling PgBouncer in front of the server (BALCAO_DB_PREPARE=false), or none. */
export interface TransactionPooler {
  /** Statements sent in the same message as every BEGIN (`; set local …`), for the settings the
   *  pooler does not let the start-up packet carry; '' for none. */
  afterBegin: string;
}

export class PostgresJsDialect implements Dialect {
  constructor(
    private readonly sql: Sql,
    private readonly bounds: WaitBounds = { acquireMs: 0, queryMs: 0 },
    private readonly pooler?: TransactionPooler,
    private readonly lanes?: WriteLanes,
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PostgresJsDriver(this.sql, this.bounds, this.pooler, this.lanes);
  }
  createIntrospector(db: Kysely<any>) {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
}

/** A transaction's place on a write lane (write-lanes.ts). */
interface OnLane {
  ticket: LaneTicket;
  /** Its COMMIT or ROLLBACK is sent: nothing more of it may follow on the lane's connection. */
  ended: boolean;
}

/** The driver's codes for a connection that ended or never opened (postgres.js src/errors.js, src/connection.js). */
const DRIVER_CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT']);

/**
 * A failure that ended the connection, not only the statement: class 08 (a connection exception), 57P01–03 (an
 * administrator's shutdown), the driver's own connection codes, and the socket's (ECONNRESET, EPIPE, …). A failure
 * the driver finds before sending (an undefined parameter, too many) leaves the connection as it was.
 */
function endedTheConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('08') || /^57P0[1-3]$/.test(code) || DRIVER_CONNECTION_CODES.has(code) || /^E[A-Z]+$/.test(code);
}

/** What a BEGIN carries after `start transaction` (the plan setting, the pooler's SET LOCALs), asked per connection. */
type BeginSuffix = (connection: PostgresJsConnection) => string | Promise<string>;

class PostgresJsConnection implements DatabaseConnection, WriteConnection {
  /** The transaction's connection: reserved from the pool, or its write lane's. */
  private reserved: ReservedSql | undefined;
  private lane: OnLane | undefined;
  /** A write transaction's: where its COMMIT's position is noted. */
  private commitPosition: CommitPosition | undefined;
  /** A write transaction whose BEGIN waits for its first statement: sent with it, or never when that statement is
   *  also its last (`sendAhead`'s `last`), which then commits by itself. */
  private beginPending = false;
  /** That lone statement's transaction: its commit position's query, when sent right behind it. */
  private lone: { position?: Promise<unknown> } | undefined;
  /** Statements of the transaction sent but not yet awaited (its BEGIN, statements sent ahead): their
   *  answers are awaited with the next statement, whose result waits for theirs. */
  private inFlight: Promise<unknown>[] = [];
  constructor(
    private readonly sql: Sql,
    private readonly bounds: WaitBounds,
    private readonly pooler: TransactionPooler | undefined,
    private readonly lanes: WriteLanes | undefined,
    private readonly beginSuffix: BeginSuffix,
  ) {}

  private readonly answerDeadline = { error: () => new AcquireTimeoutError('query answer', this.bounds.queryMs) };
  private readonly acquireTimeout = () => new AcquireTimeoutError('database connection', this.bounds.acquireMs);

  /** Reserves the transaction's connection: on the write lane of `laneKey` where the database has lanes. */
  async reserve(laneKey?: string): Promise<void> {
    if (this.reserved) return;
    if (laneKey && this.lanes) {
      const ticket = await this.lanes.enter(laneKey, {
        ms: this.bounds.acquireMs,
        error: this.acquireTimeout,
        reserve: () => this.sql.reserve(),
      });
      this.lane = { ticket, ended: false };
      this.reserved = ticket.connection;
      return;
    }
    // A connection that arrives after its caller gave up goes straight back to the pool.
    this.reserved = await within(this.sql.reserve(), this.bounds.acquireMs, {
      error: this.acquireTimeout,
      late: (connection) => connection.release(),
    });
  }

  release(): void {
    if (this.lane) {
      this.endOnLane();
      this.lane.ticket.done();
      this.lane = undefined;
    } else this.reserved?.release();
    this.reserved = undefined;
    this.commitPosition = undefined;
    this.beginPending = false;
    this.lone = undefined;
    this.inFlight = [];
  }

  /** Opens a transaction: `start transaction` and what follows it in its message, sent without waiting. */
  async open(level = ''): Promise<void> {
    const suffix = await this.beginSuffix(this);
    this.begin(`start transaction${level}${suffix}`);
  }

  async beginWrite(options: WriteTransactionOptions): Promise<void> {
    await this.reserve(options.lane);
    this.commitPosition = options.commitPosition;
    // Behind a transaction pooler every transaction carries its SET LOCALs (the timeouts): it is opened at once.
    if (this.pooler) await this.open();
    else this.beginPending = true;
  }

  /** Sends the BEGIN a write transaction still owes, ahead of its next statement. */
  private async opened(): Promise<void> {
    if (!this.beginPending) return;
    this.beginPending = false;
    await this.open();
  }

  async sendAhead(query: CompiledQuery, statement: DeferredStatement, last = false): Promise<void> {
    if (!this.reserved) throw new Error('a statement sent ahead outside a transaction');
    if (this.lone) throw new Error('a statement after the last of a transaction');
    if (last && this.beginPending) {
      this.beginPending = false;
      this.lone = {};
    } else await this.opened();
    const parameters = [...query.parameters] as never[];
    this.send(
      this.onConnection(this.reserved.unsafe(query.sql, parameters, { prepare: parameters.length <= MAX_PREPARED_PARAMETERS })),
      statement,
    );
    if (this.lone && this.commitPosition) {
      // Read once the statement has committed: the server answers a connection's statements in order. Not padded:
      // the two leave together at the end of the turn (no lock waits for it), and the server parses 40 bytes, not 1 KiB.
      const position = this.onConnection(this.reserved.unsafe(COMMIT_POSITION).execute());
      position.catch(() => {}); // awaited once the statement succeeded
      this.lone.position = position;
    }
  }

  commitWrite(): Promise<void> {
    return this.lone || this.beginPending ? this.committedAlone() : this.commit();
  }

  rollbackWrite(): Promise<void> {
    if (!this.lone && !this.beginPending) return this.rollback();
    // A lone statement that failed committed nothing, and there is no transaction to end. Its position query is
    // awaited too: the connection goes back to the pool with nothing of this write still to answer.
    this.beginPending = false;
    this.endOnLane();
    const sent = [...this.inFlight, this.lone?.position];
    this.inFlight = [];
    return Promise.allSettled(sent).then(() => undefined);
  }

  /** The end of a transaction of one statement (or of none: nothing to commit): its answer, then its commit position. */
  private async committedAlone(): Promise<void> {
    if (this.beginPending) {
      this.beginPending = false;
      this.endOnLane();
      return;
    }
    const scope = this.commitPosition;
    // Sent right behind the statement whenever the write notes a position (sendAhead).
    const position = this.lone?.position;
    this.endOnLane();
    await this.drainInFlight();
    if (!scope || !position) return;
    const rows = (await position.catch(() => [])) as { lsn: string }[];
    noteCommit(scope, lsnToNumber(rows[0]?.lsn));
  }

  /** The transaction's end is sent: the lane's next transaction may follow it. */
  private endOnLane(): void {
    if (!this.lane || this.lane.ended) return;
    this.lane.ended = true;
    this.lane.ticket.ended();
  }

  /** `statement`, handed to the transaction's connection: on a lane, a failure that ended the connection is told. */
  private onConnection(statement: PendingStatement): PendingStatement {
    const ticket = this.lane?.ticket;
    if (ticket)
      statement.then(undefined, (err: unknown) => {
        if (endedTheConnection(err)) ticket.connectionLost();
      });
    return statement;
  }

  /** Sends a statement of the transaction without waiting for its answer; a failure (through its
   *  `meaning`) is reported by the next statement. */
  private send(running: Promise<Iterable<unknown>>, deferred?: DeferredStatement): void {
    const sent = running.then(
      (rows) => deferred?.answered(Array.from(rows)),
      (err: unknown) => {
        if (!deferred) throw err;
        deferred.failed(err);
        throw deferred.meaning(err);
      },
    );
    sent.catch(() => {}); // handled by the next statement, which awaits it
    this.inFlight.push(sent);
  }

  /** Whether the Citus extension is installed in the database, asked on the reserved connection. */
  async citusInstalled(): Promise<boolean> {
    if (!this.reserved) throw new Error('a question on a connection that is not reserved');
    const [row] = await this.reserved.unsafe<{ citus: boolean }[]>(CITUS_INSTALLED, [], { prepare: false });
    return row?.citus === true;
  }

  /** Sends BEGIN without waiting for its answer: the next statement follows it on the same connection,
   *  so opening a transaction costs no round trip of its own. Its failure is the next statement's. */
  begin(text: string): void {
    if (!this.reserved) throw new Error('begin on a connection that is not reserved');
    this.send(this.onConnection(this.reserved.unsafe(text)));
  }

  /** Ends the transaction whatever its statements in flight did: a rollback never fails for their failures. */
  async rollback(): Promise<void> {
    const inFlight = this.inFlight;
    this.inFlight = [];
    // On a lane after its COMMIT (which failed): the server ended the transaction, and what follows is another's.
    if (this.lane?.ended) {
      await Promise.allSettled(inFlight);
      return;
    }
    const running = this.reserved ? this.onConnection(this.reserved.unsafe('rollback')) : this.sql.unsafe('rollback');
    this.endOnLane();
    await Promise.allSettled(inFlight);
    await running;
  }

  /** COMMIT, written to the socket at once (see IMMEDIATE_COMMIT). */
  async commit(): Promise<void> {
    if (!this.reserved) throw new Error('commit on a connection that is not reserved');
    // A write request's commit position travels right behind its COMMIT (commit-lsn.ts). Behind a transaction
    // pooler nothing may follow the COMMIT before its answer (see `alone`): there it is read after it.
    const scope = this.commitPosition;
    const reserved = this.reserved;
    const positionBehind = scope !== undefined && !this.pooler;
    // Executed in this order now, so the driver takes the COMMIT before the position (a query starts when awaited).
    const committing = this.onConnection(reserved.unsafe(positionBehind ? 'commit' : IMMEDIATE_COMMIT, [], { prepare: false }).execute());
    const readPosition = (text: string) => Promise.resolve(this.onConnection(reserved.unsafe(text, [], { prepare: false }).execute()));
    const sentWithCommit = positionBehind ? readPosition(POSITION_BEHIND_COMMIT) : undefined;
    sentWithCommit?.catch(() => {}); // awaited below only once the commit succeeded
    this.endOnLane();
    await this.afterInFlight(committing);
    if (scope) {
      // Committed, position unknown (the connection broke in between): the key's reads stay on the primary. A lane
      // has no pooler, so its position was sent with the COMMIT.
      const rows = (await (sentWithCommit ?? readPosition(COMMIT_POSITION)).catch(() => [])) as unknown as { lsn: string }[];
      noteCommit(scope, lsnToNumber(rows[0]?.lsn));
    }
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const parameters = [...query.parameters] as never[];
    if (this.lone) throw new Error('a statement after the last of a transaction');
    await this.opened();
    if (!this.reserved && this.pooler)
      return resultOf(await within(this.alone(query.sql, parameters), this.bounds.queryMs, this.answerDeadline));
    const running = this.reserved
      ? this.onConnection(this.reserved.unsafe(query.sql, parameters, { prepare: parameters.length <= MAX_PREPARED_PARAMETERS }))
      : this.sql.unsafe(query.sql, parameters, { prepare: parameters.length <= MAX_PREPARED_PARAMETERS });
    // Inside a transaction the server's statement timeout bounds each query; a lone query also waits in the queue.
    const result = this.reserved
      ? await this.afterInFlight(running)
      : await within(Promise.resolve(running), this.bounds.queryMs, this.answerDeadline);
    return resultOf(result);
  }

  /**
   * A lone statement behind a transaction pooler, on a connection of its own until answered. The pool
   * would otherwise send it right behind another lone statement on a busy connection, and PgBouncer
   * (1.18) hands the server connection back at the first one's end, losing the second's answer: it then
   * waits for ever (test/pgbouncer.test.ts). Inside a transaction the server connection stays linked,
   * so the transaction's statements still travel together.
   */
  private async alone(text: string, parameters: never[]): Promise<RowList> {
    const connection = await this.sql.reserve();
    try {
      return await connection.unsafe(text, parameters, { prepare: false });
    } finally {
      connection.release();
    }
  }

  /** The answer of `running`, sent now, once the statements in flight before it have answered: the
   *  first of them to fail is its failure (after one, the server refuses the rest of the transaction). */
  private async afterInFlight<T>(running: PromiseLike<T>): Promise<T> {
    const answer = Promise.resolve(running.then((value) => value));
    if (this.inFlight.length === 0) return answer;
    answer.catch(() => {}); // reported below, after the earlier failures
    await this.drainInFlight();
    return answer;
  }

  /** Waits for the statements in flight, in the order sent: the first to fail is the failure reported. */
  private async drainInFlight(): Promise<void> {
    const inFlight = this.inFlight;
    this.inFlight = [];
    for (const sent of inFlight) await sent;
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    await this.opened();
    await this.drainInFlight();
    const cursor = (this.reserved ?? this.sql).unsafe(query.sql, [...query.parameters] as never[]).cursor(chunkSize);
    for await (const rows of cursor) yield { rows: rows as R[] };
  }
}

class PostgresJsDriver implements Driver {
  constructor(
    private readonly sql: Sql,
    private readonly bounds: WaitBounds,
    private readonly pooler: TransactionPooler | undefined,
    private readonly lanes: WriteLanes | undefined,
  ) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PostgresJsConnection(this.sql, this.bounds, this.pooler, this.lanes, this.beginSuffix);
  }
  async beginTransaction(connection: PostgresJsConnection, settings: TransactionSettings): Promise<void> {
    await connection.reserve();
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    const mode = settings.accessMode ? ` ${settings.accessMode}` : '';
    await connection.open(`${level}${mode}`);
  }

  /** One simple-protocol message (no parameters): its SET LOCALs cost no round trip of their own. Behind a
   *  transaction pooler statements are not prepared: each is planned anyway, and the setting would not matter. */
  private readonly beginSuffix: BeginSuffix = (connection) => this.pooler?.afterBegin ?? this.planning ?? this.planningOf(connection);

  /** What every BEGIN carries on prepared statements: GENERIC_PLANS, or nothing on a Citus coordinator. Asked by the
   *  first transaction, once (again after a failed ask), then known without a wait. */
  private planning: string | undefined;
  private asking: Promise<string> | undefined;
  private planningOf(connection: PostgresJsConnection): Promise<string> {
    this.asking ??= connection.citusInstalled().then(
      (citus) => (this.planning = citus ? '' : GENERIC_PLANS),
      (err: unknown) => {
        this.asking = undefined;
        throw err;
      },
    );
    return this.asking;
  }
  async commitTransaction(connection: PostgresJsConnection): Promise<void> {
    await connection.commit();
  }
  async rollbackTransaction(connection: PostgresJsConnection): Promise<void> {
    await connection.rollback();
  }
  async savepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`savepoint ${quoteIdentifier(name)}`));
  }
  async rollbackToSavepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`rollback to savepoint ${quoteIdentifier(name)}`));
  }
  async releaseSavepoint(connection: PostgresJsConnection, name: string): Promise<void> {
    await connection.executeQuery(raw(`release savepoint ${quoteIdentifier(name)}`));
  }
  async releaseConnection(connection: PostgresJsConnection): Promise<void> {
    connection.release();
  }
  async destroy(): Promise<void> {
    // Callers end their work first (a graceful stop drains the requests); a statement still waiting then
    // (its answer lost, its server gone) must not keep the process from ending.
    await this.sql.end({ timeout: END_TIMEOUT_SECONDS });
  }
}

type RowList = Awaited<ReturnType<Sql['unsafe']>>;
type PendingStatement = ReturnType<Sql['unsafe']>;

function resultOf<R>(result: RowList): QueryResult<R> {
  const { command, count } = result;
  const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return { numAffectedRows: changed ? BigInt(count) : undefined, rows: Array.from(result) as R[] };
}

/** How long closing the pool waits for statements still running before it ends their connections. */
const END_TIMEOUT_SECONDS = 5;

const raw = (sql: string) => CompiledQuery.raw(sql);
