// `balcao serve --workers N` (or BALCAO_WORKERS): a primary process migrates once, then runs N
// worker processes that share one port (node:cluster), replaces a worker that dies, and on
// SIGINT/SIGTERM asks every worker to stop gracefully and waits for all of them.
import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.ts';
import { CliError, output } from './runtime.ts';

/** The primary kills its workers this long after their own bound (BALCAO_SHUTDOWN_TIMEOUT_MS) ran out. */
const KILL_MARGIN_MS = 1_000;
/** A worker that dies more often than this (per minute) is a crash loop: the primary gives up. */
const MAX_RESTARTS_PER_MINUTE = 5;

/** What `serve --json` prints once listening (url, host, port, database). */
type Listening = Record<string, unknown>;

interface ListeningMessage {
  type: 'balcao:listening';
  listening: Listening;
}

/** Several processes need a database and rate-limit counters they can share. */
export function checkWorkersAllowed(config: Pick<Config, 'databaseUrl' | 'redisUrl'>, workers: number): void {
  if (workers <= 1) return;
  if (!config.databaseUrl)
    throw new CliError(
      `${workers} workers need PostgreSQL (DATABASE_URL): the embedded database is opened by one process only; run one worker`,
    );
  if (!config.redisUrl)
    throw new CliError(`${workers} workers need REDIS_URL: rate limits are counted in Redis so that they stay exact across workers`);
}

/** In a worker process: serve (`serveOne`, over the already migrated database) and tell the primary. */
export async function serveAsWorker(serveOne: () => Promise<Listening>): Promise<void> {
  const listening = await serveOne();
  process.send?.({ type: 'balcao:listening', listening } satisfies ListeningMessage);
}

/** In the primary: migrate once, fork the workers, print once when all listen, stop them all on a signal. */
export async function serveWithWorkers(config: Config, workers: number, json: boolean, migrateOnce: () => Promise<void>): Promise<void> {
  checkWorkersAllowed(config, workers);
  await migrateOnce();
  // BALCAO_METRICS_PORT: the primary serves every worker's metrics summed (prom-client's AggregatorRegistry
  // asks each worker over the cluster channel); the workers open no metrics listener of their own.
  let metrics: { url: string; close(): Promise<void> } | undefined;
  if (config.metricsPort !== undefined) {
    const { listenMetrics, workersMetrics } = await import('../http/metrics.ts');
    metrics = await listenMetrics(workersMetrics(), config.metricsHost, config.metricsPort);
  }
  const pool = new WorkerPool(config.shutdownTimeoutMs + KILL_MARGIN_MS);
  process.once('SIGINT', () => pool.stopAll('SIGINT', 0));
  process.once('SIGTERM', () => pool.stopAll('SIGTERM', 0));
  const first = await pool.start(workers);
  if (json && first) output(true, { ...first, ...(metrics ? { metrics_url: metrics.url } : {}), workers }, () => '');
}

/** The primary's workers: forked, each replaced when it dies once all have listened (a crash loop ends the
 *  primary), stopped together, and killed when they outlive their own shutdown bound. */
class WorkerPool {
  private stopping = false;
  private ready = false;
  private readonly restarts: number[] = [];
  private readonly waiting = new Set<Worker>();
  private first: Listening | undefined;
  private resolveReady: () => void = () => {};
  private rejectReady: (err: Error) => void = () => {};

  constructor(private readonly killAfterMs: number) {}

  /** Forks `count` workers; resolves with what the first one listening said, once all listen. */
  async start(count: number): Promise<Listening | undefined> {
    const allListening = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    cluster.on('exit', (worker, code, signal) => this.exited(worker, signal ?? `exit code ${code}`));
    for (let i = 0; i < count; i++) this.fork();
    try {
      await allListening;
    } catch (err) {
      this.stopAll('SIGTERM', 1);
      throw err;
    }
    this.ready = true;
    return this.first;
  }

  stopAll(signal: NodeJS.Signals, code: number): void {
    if (this.stopping) return;
    this.stopping = true;
    process.stderr.write(`balcao: ${signal}: stopping ${Object.keys(cluster.workers ?? {}).length} workers\n`);
    const timer = setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      process.exit(1);
    }, this.killAfterMs).unref();
    const exitWhenDone = () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        clearTimeout(timer);
        process.exit(code);
      }
    };
    cluster.on('exit', exitWhenDone);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    exitWhenDone();
  }

  private fork(): void {
    const worker = cluster.fork();
    this.waiting.add(worker);
    worker.on('message', (message: ListeningMessage) => {
      if (message?.type !== 'balcao:listening') return;
      this.first ??= message.listening;
      this.waiting.delete(worker);
      if (!this.ready && this.waiting.size === 0) this.resolveReady();
    });
  }

  private exited(worker: Worker, how: string): void {
    this.waiting.delete(worker);
    if (this.stopping) return;
    if (!this.ready) {
      this.rejectReady(new CliError(`a worker exited before listening (${how})`));
      return;
    }
    const now = Date.now();
    this.restarts.push(now);
    while (this.restarts.length && this.restarts[0]! < now - 60_000) this.restarts.shift();
    if (this.restarts.length > MAX_RESTARTS_PER_MINUTE) {
      process.stderr.write('balcao: workers keep dying; stopping\n');
      this.stopAll('SIGTERM', 1);
      return;
    }
    process.stderr.write(`balcao: worker ${worker.process.pid} exited (${how}); starting another\n`);
    this.fork();
  }
}
