// Webhook metrics for /metrics (deploy/grafana, deploy/prometheus/alerts.yml): the attempts this instance made, by
// outcome, and the state of the queue, read from the database at each scrape. The queue is shared by every
// instance, so each reports the same values: dashboards and alerts take their max, and so does the --workers sum.
import { sql } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Database } from '../infra/db/engine/database.ts';
import type { DeliveryWorker } from './delivery-worker.ts';

/** How often the queue's state is read from the database, at most. */
const QUEUE_READ_EVERY_MS = 10_000;

/** A pending delivery due longer ago than this counts as overdue: the workers are not keeping up. */
export const OVERDUE_AFTER_SECONDS = 60;

interface QueueState {
  pending: number;
  overdue: number;
  failing_seconds_max: number;
}

export function registerWebhookMetrics(registry: Registry, database: Database, worker: DeliveryWorker, deadlineMs: number): void {
  new Counter({
    name: 'balcao_webhook_attempts_total',
    help: 'Webhook delivery attempts this instance made, by outcome (succeeded, failed).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ outcome: 'succeeded' }, worker.outcomes.succeeded);
      this.inc({ outcome: 'failed' }, worker.outcomes.failed);
    },
  });
  new Counter({
    name: 'balcao_webhook_deliveries_given_up_total',
    help: 'Deliveries whose last scheduled attempt failed (status failed), by this instance.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(worker.outcomes.given_up);
    },
  });

  // One query feeds the three gauges, at most every QUEUE_READ_EVERY_MS (scrapes come every 15 s or so; tests and a
  // draining stop scrape far more often, and the query must not compete with requests for the pool). A scrape that
  // finds the database away keeps the last values.
  let last: QueueState = { pending: 0, overdue: 0, failing_seconds_max: 0 };
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<QueueState> | undefined;
  const read = (): Promise<QueueState> => {
    if (Date.now() - readAt < QUEUE_READ_EVERY_MS) return Promise.resolve(last);
    reading ??= queueState(database, deadlineMs)
      .then((state) => {
        last = state;
        readAt = Date.now();
        return state;
      })
      .catch(() => last)
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  const gauge = (name: string, help: string, pick: (state: QueueState) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        this.set(pick(await read()));
      },
    });
  gauge(
    'balcao_webhook_deliveries_pending',
    'Deliveries waiting for an attempt (due or scheduled for a retry), all accounts.',
    (s) => s.pending,
  );
  gauge(
    'balcao_webhook_deliveries_overdue',
    `Pending deliveries due more than ${OVERDUE_AFTER_SECONDS} s ago: the backlog the workers have not reached.`,
    (s) => s.overdue,
  );
  gauge(
    'balcao_webhook_endpoint_failing_seconds_max',
    'How long the enabled endpoint failing the longest has failed every delivery (disabled at 5 days); 0 when none fails.',
    (s) => s.failing_seconds_max,
  );
}

async function queueState(database: Database, deadlineMs: number): Promise<QueueState> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('webhook metrics: the database did not answer in time')), deadlineMs);
  });
  const query = Promise.all([
    sql<{ pending: number; overdue: number }>`
      SELECT count(*)::int AS pending,
             (count(*) FILTER (WHERE next_attempt_at < now() - make_interval(secs => ${OVERDUE_AFTER_SECONDS})))::int AS overdue
      FROM webhook_deliveries WHERE status = 'pending'`.execute(database.db),
    sql<{ seconds: number | null }>`
      SELECT extract(epoch FROM now() - min(failing_since))::float8 AS seconds
      FROM webhook_endpoints WHERE enabled AND failing_since IS NOT NULL`.execute(database.db),
  ]);
  query.catch(() => {});
  try {
    const [queue, failing] = await Promise.race([query, deadline]);
    return {
      pending: Number(queue.rows[0]?.pending ?? 0),
      overdue: Number(queue.rows[0]?.overdue ?? 0),
      failing_seconds_max: Math.max(0, Number(failing.rows[0]?.seconds ?? 0)),
    };
  } finally {
    clearTimeout(timer);
  }
}
