// The delivery queue's worker, inside every `balcao serve` (and every app instance): claims due
// deliveries with a lease taken by a re-checked UPDATE (N instances deliver each attempt once; a
// killed instance's lease runs out and another takes over), posts them, records each attempt,
// schedules the retry with jitter, marks the last failure `failed`, and disables an endpoint that
// has failed everything for 5 days. Sleeps until the next due time or a NOTIFY; no busy loop.
import { randomUUID } from 'node:crypto';
import type { Span } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Config } from '../config.ts';
import type { KeyMode } from '../domain/api-keys.ts';
import { eventRow } from '../events/event-schema.ts';
import { purgeExpiredEvents } from '../events/event-retention.ts';
import { DELIVERIES_CHANNEL } from '../events/channels.ts';
import type { Row } from '../infra/db/engine/row.ts';
import type { Database } from '../infra/db/engine/database.ts';
import {
  type AccountKey,
  accountColumnSql,
  columnsScopedSql,
  conditionScopedSql,
  keysScopedSql,
  sameScopeSql,
  valuesScopedSql,
} from '../infra/db/tenancy/tenancy.ts';
import { outputRow } from '../query/output.ts';
import { rowMeta } from '../query/row-meta.ts';
import { type AttemptOutcome, postWebhook } from './post-webhook.ts';
import { signatureHeader } from './signing.ts';
import type { Tracing } from '../telemetry/tracing.ts';

/** Deliveries claimed by one query at most. */
const BATCH = 20;
/** Attempts posted at once by one worker: a slow endpoint holds one of these, not the others' turn. */
const MAX_IN_FLIGHT = 50;
/** Attempts posted at once to one endpoint by one worker: a burst of events does not flood one receiver. */
const PER_ENDPOINT = 20;
const LEASE_MARGIN_MS = 10_000;
/** An attempt's columns as both records insert them (a failure adds its next_attempt_at). */
const ATTEMPT_COLUMNS = [
  'delivery_id',
  'endpoint_id',
  'event_id',
  'event_type',
  'attempt_number',
  'response_status',
  'error',
  'response_body',
  'duration_ms',
];
/** Longest sleep when nothing is due: bounds how late a lease left by a killed instance is noticed. */
const IDLE_MS = 30_000;
const DISABLE_AFTER_DAYS = 5;
const RETENTION_EVERY_MS = 60 * 60 * 1000;
/**
 * The first cycle waits this long after listening: its queries (the first on those tables) would
 * otherwise run before the first requests, which the embedded engine serves on the same thread.
 * A NOTIFY of a new delivery runs a cycle at once whatever this says.
 */
const FIRST_CYCLE_AFTER_MS = 1000;
/** How long a graceful stop lets attempts in flight finish before releasing them. */
const STOP_GRACE_MS = 3000;

interface Claimed {
  id: string;
  attempt_count: number;
  endpoint_id: string;
  accountId: string;
  mode: KeyMode;
  url: string;
  secret: string;
  previous_secret: string | null;
  event: Row;
  /** Its POST has ended (delivery-worker `posted`). */
  posted?: boolean;
}

/** What an attempt's span says of its outcome: the status, or the kind of failure (never the answer's body). */
export function describeAttempt(span: Span, outcome: AttemptOutcome): void {
  if (outcome.status !== null) span.setAttribute('http.response.status_code', outcome.status);
  span.setAttribute('balcao.webhook.outcome', outcome.aborted ? 'released' : outcome.ok ? 'succeeded' : 'failed');
  if (outcome.error) span.setAttribute('error.type', outcome.error);
  if (!outcome.ok && !outcome.aborted) span.setStatus({ code: 2 /* SpanStatusCode.ERROR: the API is not loaded when traces are off */ });
}

/** ±10% around the scheduled delay, so retries of many deliveries do not land together. */
const withJitter = (seconds: number): number => Math.max(0, Math.round(seconds * 1000 * (0.9 + Math.random() * 0.2)));

export class DeliveryWorker {
  private readonly owner = randomUUID();
  private readonly leaseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private retentionTimer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** The last claim found more due than it took: each attempt that ends looks again. */
  private backlog = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** POSTs in flight by endpoint id (an attempt's record no longer counts: see `posted`). */
  private readonly atEndpoint = new Map<string, number>();
  private stopped = false;
  private readonly abort = new AbortController();
  /** Attempts recorded by this worker since start, by outcome (webhook-metrics.ts reads them); `given_up` counts
   *  the deliveries whose last retry failed. */
  readonly outcomes = { succeeded: 0, failed: 0, given_up: 0 };

  constructor(
    private readonly database: Database,
    private readonly config: Pick<Config, 'webhookRetrySchedule' | 'webhookAllowPrivate' | 'webhookTimeoutMs'>,
    private readonly log: FastifyBaseLogger,
    /** With traces on: each attempt is a span (its trace's first), and its POST carries `traceparent`. */
    private readonly tracing?: Tracing,
  ) {
    // Long enough that a starved event loop (a busy machine) never lets a live attempt's lease lapse.
    this.leaseMs = 2 * config.webhookTimeoutMs + LEASE_MARGIN_MS;
  }

  async start(): Promise<void> {
    this.unlisten = await this.database.listen(DELIVERIES_CHANNEL, () => this.kick());
    this.retentionTimer = setInterval(() => void this.purgeExpired(), RETENTION_EVERY_MS).unref();
    this.wakeAt(Date.now() + FIRST_CYCLE_AFTER_MS);
  }

  /** Stops claiming; lets attempts in flight finish for a moment, then aborts and releases them. */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.retentionTimer);
    await this.unlisten?.().catch(() => {});
    await this.running;
    if (this.inFlight.size > 0) {
      const settled = Promise.all(this.inFlight).then(() => 'done');
      const grace = new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref());
      if ((await Promise.race([settled, grace])) !== 'done') {
        this.abort.abort();
        await settled;
      }
    }
  }

  /** Runs a cycle now, or right after the one running. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.cycle()
      .catch((err) => this.log.error({ err }, 'webhook delivery cycle failed'))
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else if (!(this.backlog && this.inFlight.size > 0)) void this.scheduleNext(); // else an attempt's end looks again
      });
  }

  private async scheduleNext(): Promise<void> {
    let wait = IDLE_MS;
    try {
      const { rows } = await sql<{ ms: number | null }>`
        SELECT cast(extract(epoch from (min(greatest(d.next_attempt_at, coalesce(d.lease_until, d.next_attempt_at))) - now())) * 1000 as float8) AS ms
        FROM webhook_deliveries d JOIN webhook_endpoints e ON ${sameScopeSql('e', 'd', 'account')} AND e.id = d.endpoint_id
        WHERE d.status = 'pending' AND e.enabled`.execute(this.database.db);
      const ms = rows[0]?.ms;
      if (ms !== null && ms !== undefined) wait = Math.min(IDLE_MS, Math.max(0, Math.ceil(Number(ms)) + 5));
    } catch (err) {
      this.log.error({ err }, 'webhook scheduling failed');
    }
    if (this.stopped || this.running) return;
    this.wakeAt(Date.now() + wait);
  }

  /** Sets the timer of the next cycle to `at`, or keeps an earlier one: a cycle that finds nothing due schedules again. */
  private wakeAt(at: number): void {
    if (this.stopped || (this.timer && this.timerAt <= at)) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.kick();
      },
      Math.max(0, at - Date.now()),
    ).unref();
  }

  /**
   * Claims as many due deliveries as there is room for and starts posting them, without waiting for them: an
   * attempt that ends makes room, and looks again when the last claim left some due (a NOTIFY or the timer
   * brings the rest). So one slow endpoint delays its own deliveries only, and gets at most PER_ENDPOINT at once.
   */
  private async cycle(): Promise<void> {
    for (;;) {
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      if (this.stopped || room <= 0) return;
      const limit = Math.min(room, BATCH);
      const { claimed, due, heldBack } = await this.claim(limit);
      for (const c of claimed) {
        this.atEndpoint.set(c.endpoint_id, (this.atEndpoint.get(c.endpoint_id) ?? 0) + 1);
        const attempt: Promise<void> = this.deliver(c)
          .catch((err: unknown) => this.log.error({ err, delivery: c.id }, 'webhook attempt failed to run'))
          .finally(() => {
            this.inFlight.delete(attempt);
            this.posted(c);
            if (this.backlog) this.kick();
          });
        this.inFlight.add(attempt);
      }
      // Held back for a full endpoint: due, and claimed once one of that endpoint's attempts ends.
      this.backlog = due >= limit || heldBack;
      if (!this.backlog) return;
    }
  }

  /** The endpoint's POST of `c` has ended (called again when its attempt ends: counted once). Its turn at the
   *  endpoint is over even while the attempt is being recorded: PER_ENDPOINT bounds the receiver's load. */
  private posted(c: Claimed): void {
    if (c.posted) return;
    c.posted = true;
    const left = (this.atEndpoint.get(c.endpoint_id) ?? 1) - 1;
    if (left > 0) this.atEndpoint.set(c.endpoint_id, left);
    else this.atEndpoint.delete(c.endpoint_id);
    if (this.backlog) this.kick();
  }

  /**
   * Due deliveries no live lease holds, leased to this worker: the due ones are read, then leased by
   * an UPDATE that checks again that no lease holds them (a row another worker leased meanwhile is
   * re-checked after its lock and left out). No FOR UPDATE, which Citus refuses across shards;
   * `due` tells the cycle whether more may be waiting, `heldBack` that some due ones wait for room at their endpoint.
   */
  private async claim(limit: number): Promise<{ claimed: Claimed[]; due: number; heldBack: boolean }> {
    const db = this.database.db;
    const full = [...this.atEndpoint].filter(([, n]) => n >= PER_ENDPOINT).map(([id]) => id);
    const { rows: due } = await sql<AccountKey & { endpoint_id: string }>`
      SELECT ${accountColumnSql('d')} AS account_id, d.id, d.endpoint_id FROM webhook_deliveries d JOIN webhook_endpoints e ON ${sameScopeSql('e', 'd', 'account')} AND e.id = d.endpoint_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now()) AND e.enabled
        ${full.length > 0 ? sql`AND d.endpoint_id <> ALL(cast(${full} as uuid[]))` : sql``}
      ORDER BY d.next_attempt_at
      LIMIT ${limit}`.execute(db);
    if (due.length === 0) return { claimed: [], due: 0, heldBack: false };
    // At most PER_ENDPOINT in flight per endpoint: the rest stays due for a later claim.
    const taken = new Map<string, number>();
    const fits = due.filter((r) => {
      const n = (this.atEndpoint.get(r.endpoint_id) ?? 0) + (taken.get(r.endpoint_id) ?? 0);
      if (n >= PER_ENDPOINT) return false;
      taken.set(r.endpoint_id, (taken.get(r.endpoint_id) ?? 0) + 1);
      return true;
    });
    // Never empty: full endpoints are left out by the query, so the first row always fits.
    const heldBack = fits.length < due.length;
    const { rows } = await sql<AccountKey>`
      UPDATE webhook_deliveries SET lease_until = now() + cast(${`${this.leaseMs} milliseconds`} as interval), lease_owner = ${this.owner}
      WHERE ${keysScopedSql(fits)}
        AND status = 'pending' AND (lease_until IS NULL OR lease_until < now())
      RETURNING ${accountColumnSql()} AS account_id, id`.execute(db);
    if (rows.length === 0) return { claimed: [], due: due.length, heldBack };
    // The queue serves every tenant: deliveries are addressed by the ids just claimed, and each
    // carries the tenant of its event into its attempt.
    const found = (
      await sql<Row>`
        SELECT d.id AS delivery_id, d.attempt_count, d.endpoint_id, e.url, e.secret,
               CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret,
               ${accountColumnSql('ev')} AS account_id, ev.mode, ev.id, ev.type, ev.created_at, ev.data, ev.request_id, ev.origin
        FROM webhook_deliveries d JOIN webhook_endpoints e ON ${sameScopeSql('e', 'd', 'account')} AND e.id = d.endpoint_id
          JOIN events ev ON ${sameScopeSql('ev', 'd', 'account')} AND ev.id = d.event_id
        WHERE ${keysScopedSql(rows, 'd')}`.execute(db)
    ).rows;
    const meta = rowMeta(eventRow);
    const claimed = found.map((r) => ({
      id: String(r.delivery_id),
      attempt_count: Number(r.attempt_count),
      endpoint_id: String(r.endpoint_id),
      accountId: String(r.account_id),
      mode: r.mode as KeyMode, // the column's CHECK allows live and test only
      url: String(r.url),
      secret: String(r.secret),
      previous_secret: (r.previous_secret as string | null) ?? null,
      event: outputRow(r, meta.fields, meta),
    }));
    return { claimed, due: due.length, heldBack };
  }

  private deliver(c: Claimed): Promise<void> {
    if (!this.tracing) return this.attempt(c);
    // Ids and the attempt's number only: never the endpoint's URL (it may hold a token) nor the event's data.
    const attributes = {
      'http.request.method': 'POST',
      'balcao.account_id': c.accountId,
      'balcao.webhook.endpoint_id': c.endpoint_id,
      'balcao.webhook.delivery_id': c.id,
      'balcao.webhook.attempt': c.attempt_count + 1,
      'balcao.event.id': String(c.event.id),
      'balcao.event.type': String(c.event.type),
    };
    return this.tracing.clientRootSpan('webhook delivery', attributes, (span) => this.attempt(c, span));
  }

  private async attempt(c: Claimed, span?: Span): Promise<void> {
    const body = JSON.stringify(c.event);
    const id = String(c.event.id);
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = c.previous_secret ? [c.secret, c.previous_secret] : [c.secret];
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, id, timestamp, body),
    };
    this.tracing?.injectContext(headers);
    const outcome = await postWebhook(c.url, headers, body, {
      timeoutMs: this.config.webhookTimeoutMs,
      allowPrivate: this.config.webhookAllowPrivate,
      signal: this.abort.signal,
    });
    if (span) describeAttempt(span, outcome);
    this.posted(c);
    try {
      if (outcome.aborted) await this.release(c);
      else await this.record(c, outcome);
    } catch (err) {
      // The lease runs out and the delivery is attempted again: at least once.
      this.log.error({ err, delivery: c.id }, 'webhook attempt not recorded');
    }
  }

  private async release(c: Claimed): Promise<void> {
    await sql`UPDATE webhook_deliveries SET lease_until = NULL, lease_owner = NULL WHERE ${conditionScopedSql({ accountId: c.accountId })} AND id = ${c.id} AND lease_owner = ${this.owner}`.execute(
      this.database.db,
    );
  }

  private async record(c: Claimed, outcome: AttemptOutcome): Promise<void> {
    const attempt = c.attempt_count + 1;
    const schedule = this.config.webhookRetrySchedule;
    const delay = outcome.ok ? undefined : schedule[attempt - 1];
    const status = outcome.ok ? 'succeeded' : delay === undefined ? 'failed' : 'pending';
    const nextAt = delay === undefined ? null : new Date(Date.now() + withJitter(delay));
    if (outcome.ok) await this.recordSuccess(c, attempt, outcome);
    else {
      await this.recordFailure(c, attempt, status, nextAt, outcome);
      // Attempts end after their cycle: the retry's time is known here, with no query.
      if (nextAt) this.wakeAt(nextAt.getTime());
    }
    this.outcomes[outcome.ok ? 'succeeded' : 'failed'] += 1;
    if (status === 'failed') this.outcomes.given_up += 1;
    if (!outcome.ok) this.log.info({ delivery: c.id, attempt, status: outcome.status, error: outcome.error }, 'webhook attempt failed');
  }

  /**
   * The common outcome in one statement, so one round trip and one commit: the delivery marked succeeded, its
   * attempt recorded, and its endpoint no longer failing. A delivery deleted while it was posted (its endpoint
   * deleted, or its event past retention) updates no row, and then nothing else is written. The attempt's values
   * are cast: in a SELECT list PostgreSQL does not infer them from the columns they go to.
   */
  private async recordSuccess(c: Claimed, attempt: number, outcome: AttemptOutcome): Promise<void> {
    const scope = conditionScopedSql({ accountId: c.accountId });
    await sql`
      WITH delivered AS (
        UPDATE webhook_deliveries
        SET status = 'succeeded', attempt_count = ${attempt}, next_attempt_at = NULL, lease_until = NULL, lease_owner = NULL
        WHERE ${scope} AND id = ${c.id}
        RETURNING id
      ), recorded AS (
        INSERT INTO webhook_attempts (${columnsScopedSql(ATTEMPT_COLUMNS)})
        SELECT cast(${c.accountId} as uuid), cast(${c.mode} as text), id, cast(${c.endpoint_id} as uuid), cast(${String(c.event.id)} as uuid),
               cast(${String(c.event.type)} as text), cast(${attempt} as integer), cast(${outcome.status} as integer), cast(${outcome.error} as text),
               cast(${outcome.body} as text), cast(${outcome.durationMs} as integer)
        FROM delivered
      )
      UPDATE webhook_endpoints SET failing_since = NULL
      WHERE ${scope} AND id = ${c.endpoint_id} AND failing_since IS NOT NULL AND EXISTS (SELECT 1 FROM delivered)`.execute(
      this.database.db,
    );
  }

  private async recordFailure(c: Claimed, attempt: number, status: string, nextAt: Date | null, outcome: AttemptOutcome): Promise<void> {
    await this.database.db.transaction().execute(async (trx) => {
      const updated = await sql`
        UPDATE webhook_deliveries
        SET status = ${status}, attempt_count = ${attempt}, next_attempt_at = ${nextAt?.toISOString() ?? null}, lease_until = NULL, lease_owner = NULL
        WHERE ${conditionScopedSql({ accountId: c.accountId })} AND id = ${c.id}`.execute(trx);
      // Deleted while it was posted (its endpoint deleted, or its event past retention): nothing left to record.
      if (Number(updated.numAffectedRows ?? 0) === 0) return;
      await sql`
        INSERT INTO webhook_attempts (${columnsScopedSql([...ATTEMPT_COLUMNS, 'next_attempt_at'])})
        VALUES (${valuesScopedSql(c)}, ${c.id}, ${c.endpoint_id}, ${String(c.event.id)}, ${String(c.event.type)}, ${attempt},
                ${outcome.status}, ${outcome.error}, ${outcome.body}, ${outcome.durationMs}, ${nextAt?.toISOString() ?? null})`.execute(
        trx,
      );
      // Two statements, not one with now() inside CASE/COALESCE, which Citus refuses in an UPDATE:
      // the first sees the failing_since of before this failure, as one statement's CASE would.
      await sql`
        UPDATE webhook_endpoints SET enabled = false,
          disabled_reason = ${`Disabled: every delivery failed for ${DISABLE_AFTER_DAYS} days (last: ${outcome.error ?? `HTTP ${outcome.status}`}).`}
        WHERE ${conditionScopedSql({ accountId: c.accountId })} AND id = ${c.endpoint_id} AND failing_since < now() - interval '${sql.raw(String(DISABLE_AFTER_DAYS))} days'`.execute(
        trx,
      );
      await sql`UPDATE webhook_endpoints SET failing_since = now() WHERE ${conditionScopedSql({ accountId: c.accountId })} AND id = ${c.endpoint_id} AND failing_since IS NULL`.execute(
        trx,
      );
    });
  }

  /** Retention: events (with their deliveries and attempts) go after RETENTION_DAYS. */
  private async purgeExpired(): Promise<void> {
    try {
      await purgeExpiredEvents(this.database.db);
    } catch (err) {
      this.log.error({ err }, 'event retention failed');
    }
  }
}
