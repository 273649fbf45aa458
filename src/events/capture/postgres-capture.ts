// Capture on PostgreSQL, and on a Citus cluster. On PostgreSQL one slot on the database holds every change. On
// Citus an account's rows live in shards on one node (a worker, or the coordinator when it holds shards), and
// each node's WAL has only that node's: capture runs one slot per node, each decoded by Citus's change data
// capture decoder (`citus.enable_change_data_capture`: a shard's change named as its distributed table, and none
// of Citus's own shard moves), and writes its events through the coordinator. An account's changes all come from
// its node, so its events keep that node's commit order. Nodes added to the cluster are picked up within a minute.
// A write through the API leaves no logical message on a worker (balcao_mark_origin runs on the coordinator): its
// origin is its write-log row (request_log), which its transaction inserts on the account's node; an import's and
// an erasure's is their capture_marks row. Both tables are published for inserts only, on Citus only.
import { sql } from 'kysely';
import { type Database, type Db, openDatabase } from '../../infra/db/engine/database.ts';
import {
  type CaptureState,
  type CaptureStatus,
  type ChangeCapture,
  LogicalCapture,
  type LogicalCaptureOptions,
  walInsertPosition,
} from './change-capture.ts';
import { apiOriginText } from './change-events.ts';
import { MARKS_TABLE, SETUP_LOCK } from './setup.ts';

/** The publication of the origin marks' tables (Citus). */
export const MARKS_PUBLICATION = 'balcao_capture_marks';
/** The write log's table, whose row is the origin of a write through the API. */
const WRITE_LOG_TABLE = 'request_log';
/** The session setting that makes a node decode with Citus's change data capture decoder. */
const CITUS_DECODER = { 'citus.enable_change_data_capture': 'on' } as const;
const MARKS: NonNullable<LogicalCaptureOptions['marks']> = new Map([
  [WRITE_LOG_TABLE, (row) => apiOriginText(asText(row.api_key_id), asText(row.request_id))],
  [MARKS_TABLE, (row) => String(row.origin)],
]);
const asText = (v: unknown): string | null => (v == null ? null : String(v));
const COORDINATOR = 'coordinator';
/** How often the cluster's nodes are read again. */
const NODES_EVERY_MS = 60_000;

/** A primary node of a Citus cluster that holds (or may hold) shards. */
export interface CitusNode {
  host: string;
  port: number;
  /** The coordinator: its slot is the database's own. */
  coordinator: boolean;
}

/** The cluster's primary nodes when the database's served tables are distributed by Citus, else undefined. */
export async function citusNodes(db: Db): Promise<CitusNode[] | undefined> {
  const { rows: citus } = await sql<{ distributed: boolean }>`SELECT to_regclass('pg_dist_partition') IS NOT NULL AS distributed`.execute(
    db,
  );
  if (!citus[0]?.distributed) return undefined;
  const { rows: tables } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM pg_dist_partition WHERE logicalrelid = 'customers'::regclass`.execute(db);
  if (!tables[0]?.n) return undefined;
  const { rows } = await sql<{ host: string; port: number; coordinator: boolean }>`
    SELECT nodename AS host, nodeport AS port, groupid = 0 AS coordinator FROM pg_dist_node
    WHERE noderole = 'primary' AND isactive ORDER BY groupid`.execute(db);
  // A coordinator never added as a node (citus_set_coordinator_host) is a node all the same: it is where we are.
  if (!rows.some((r) => r.coordinator)) rows.unshift({ host: '', port: 0, coordinator: true });
  return rows;
}

/** A Citus worker's database: the coordinator's URL with the worker's host and port. */
export function openNode(url: string, node: Pick<CitusNode, 'host' | 'port'>): Promise<Database> {
  const at = new URL(url);
  at.hostname = node.host;
  at.port = String(node.port);
  return openDatabase({ databaseUrl: at.toString(), dataDir: '', dbPoolSize: 2, dbPrepare: false });
}

/** The publication of the marks' tables, on the coordinator (Citus propagates it to the workers). Idempotent. */
async function publishMarks(db: Db): Promise<void> {
  // Under the set-up's lock (setup.ts): instances starting together make it once.
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SETUP_LOCK})`.execute(trx);
    await sql
      .raw(`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '${MARKS_PUBLICATION}') THEN
      CREATE PUBLICATION ${MARKS_PUBLICATION} FOR TABLE ${WRITE_LOG_TABLE}, ${MARKS_TABLE} WITH (publish = 'insert'); END IF; END $$`)
      .execute(trx);
  });
}

const STATE_WEIGHT: Record<CaptureState, number> = {
  lost: 6,
  misconfigured: 5,
  failing: 4,
  starting: 3,
  stopped: 2,
  capturing: 1,
  standby: 0,
};

interface NodeCapture {
  name: string;
  capture: LogicalCapture;
  /** A Citus worker's own connections (the coordinator's are the database's). */
  database?: Database;
}

/** PostgreSQL's capture: the database's slot, or on Citus one slot per node. */
export class PostgresCapture implements ChangeCapture {
  private nodes: NodeCapture[] = [];
  private citus = false;
  private closed = false;
  private rescan: NodeJS.Timeout | undefined;
  /** Tenants this process wrote to (Citus), each with the number of its last noted write. */
  private readonly noted = new Map<string, number>();
  private writes = 0;

  constructor(
    private readonly db: Db,
    private readonly options: LogicalCaptureOptions,
  ) {}

  get recorded(): number {
    return this.nodes.reduce((sum, n) => sum + n.capture.recorded, 0);
  }

  /** Why the database could not be asked what it is, while it cannot. */
  private unreachable: string | undefined;
  private starting: Promise<void> | undefined;

  /** Resolves once the slots are there (as LogicalCapture's start), or at once while the database does not answer:
   *  capture then starts in the background when it does. */
  async start(): Promise<void> {
    let answered: () => void = () => {};
    const unanswered = new Promise<void>((resolve) => {
      answered = resolve;
    });
    this.starting = (async () => {
      for (;;) {
        try {
          return await this.startOn(await citusNodes(this.db));
        } catch (err) {
          if (this.closed) return;
          this.unreachable = String((err as Error).message);
          answered();
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
    })();
    await Promise.race([this.starting, unanswered]);
  }

  private async startOn(nodes: CitusNode[] | undefined): Promise<void> {
    this.unreachable = undefined;
    if (this.closed) return;
    if (!nodes) {
      this.nodes = [{ name: '', capture: new LogicalCapture(this.db, this.options) }];
      return this.nodes[0]?.capture.start();
    }
    this.citus = true;
    await publishMarks(this.db);
    // The coordinator's slot first: the instance streaming it streams the workers' too.
    for (const node of nodes.filter((n) => n.coordinator)) await this.addNode(node);
    await Promise.all(nodes.filter((n) => !n.coordinator).map((node) => this.addNode(node)));
    if (this.closed) return;
    this.rescan = setInterval(() => void this.addNewNodes(), NODES_EVERY_MS);
    this.rescan.unref();
    this.leading = setInterval(() => this.followCoordinator(), 1_000);
    this.leading.unref();
  }

  private leading: NodeJS.Timeout | undefined;

  private coordinatorHeld(): boolean {
    return this.nodes.find((n) => n.name === COORDINATOR)?.capture.holding ?? false;
  }

  /** Another instance took the coordinator's slot: the workers' slots are let go for it to take. */
  private followCoordinator(): void {
    if (this.coordinatorHeld()) return;
    for (const n of this.nodes) if (n.name !== COORDINATOR && n.capture.holding) n.capture.release();
  }

  private async addNode(node: CitusNode): Promise<void> {
    const name = node.coordinator ? COORDINATOR : `${node.host}:${node.port}`;
    if (this.closed || this.nodes.some((n) => n.name === name)) return;
    let database: Database | undefined;
    const options: LogicalCaptureOptions = { ...this.options, publications: [MARKS_PUBLICATION], marks: MARKS, settings: CITUS_DECODER };
    if (!node.coordinator) {
      options.follows = () => this.coordinatorHeld();
      database = await openNode(this.options.url, node);
      if (this.closed) return database.close();
      options.url = database.sessionUrl ?? '';
      options.node = { db: database.db, name };
    }
    const entry = { name, capture: new LogicalCapture(this.db, options), ...(database ? { database } : {}) };
    this.nodes.push(entry);
    await entry.capture.start();
  }

  private async addNewNodes(): Promise<void> {
    try {
      for (const node of (await citusNodes(this.db)) ?? []) await this.addNode(node);
    } catch (err) {
      this.options.log.warn({ err }, 'change capture: the cluster’s nodes could not be read; read again in a minute');
    }
  }

  written(tenantKey: string, position: number): void {
    if (!this.citus) {
      this.nodes[0]?.capture.written(tenantKey, position);
      return;
    }
    // The position is the coordinator's; the write's commit is on its account's node, which each read samples.
    this.noted.delete(tenantKey);
    this.noted.set(tenantKey, ++this.writes);
    if (this.noted.size > 10_000) for (const key of this.noted.keys()) if (this.noted.size > 5_000) this.noted.delete(key);
  }

  async caughtUp(tenantKey: string): Promise<void> {
    if (!this.citus) return this.nodes[0]?.capture.caughtUp(tenantKey);
    const write = this.noted.get(tenantKey);
    if (write === undefined) return;
    // Each node's WAL position now is past the commit of every write this process noted: once each node's capture
    // passed it, those writes are events. (Which node holds the account is Citus's to know.)
    await Promise.all(
      this.nodes.map(async ({ capture, database }) => {
        capture.written(tenantKey, await walInsertPosition(database?.db ?? this.db));
        await capture.caughtUp(tenantKey);
      }),
    ).catch((err) => this.options.log.warn({ err }, 'change capture: a node’s position could not be read'));
    if (this.noted.get(tenantKey) === write) this.noted.delete(tenantKey);
  }

  async status(): Promise<CaptureStatus> {
    const all = await Promise.all(this.nodes.map(async (n) => ({ name: n.name, status: await n.capture.status() })));
    const first = all[0]?.status;
    if (!first)
      return {
        state: this.closed ? 'stopped' : this.unreachable ? 'failing' : 'starting',
        lagBytes: null,
        lagSeconds: 0,
        ...(this.unreachable && !this.closed ? { reason: this.unreachable } : {}),
      };
    if (!this.citus) return first;
    let worst = first;
    for (const { status } of all) if (STATE_WEIGHT[status.state] > STATE_WEIGHT[worst.state]) worst = status;
    const reasons = all.flatMap(({ name, status }) => (status.reason ? [`${name}: ${status.reason}`] : []));
    return {
      state: all.some((s) => s.status.state === 'capturing') && STATE_WEIGHT[worst.state] <= 1 ? 'capturing' : worst.state,
      lagBytes: all.some((s) => s.status.lagBytes === null) ? null : all.reduce((sum, s) => sum + (s.status.lagBytes ?? 0), 0),
      lagSeconds: Math.max(...all.map((s) => s.status.lagSeconds)),
      ...(reasons.length ? { reason: reasons.join('; ') } : {}),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.rescan);
    clearInterval(this.leading);
    const closeAll = () => Promise.all(this.nodes.map((n) => n.capture.close()));
    // The nodes' captures first: a start in progress waits on them.
    await closeAll();
    await this.starting;
    await closeAll();
    await Promise.all(this.nodes.map((n) => n.database?.close()));
  }
}
