// `balcao serve`: migrate if needed, then serve the API until SIGINT/SIGTERM (then a graceful stop).
// With --json, stdout carries one JSON object once listening and the logs go to stderr.
import cluster from 'node:cluster';
import type { Command } from 'commander';
import type { buildApp } from '../app.ts';
import { type Config, parseWorkerCount } from '../config.ts';
import { announceStop } from '../infra/db/engine/data-dir-lock.ts';
import { compileEngine } from '../infra/db/engine/pglite-engine.ts';
import type { Database } from '../infra/db/engine/database.ts';
import { sayWaiting, whenDatabaseAnswers } from './database-wait.ts';
import { logOutput } from './log-output.ts';
import { commandContext, output } from './runtime.ts';

/**
 * The HTTP application's modules (Fastify, the routes, their schemas), loaded on demand. Start-up
 * calls this before opening the database, so the modules load while PGlite compiles its
 * WebAssembly on V8's background threads: the two waits overlap instead of adding up.
 */
export function loadServing() {
  const loading = Promise.all([import('../app.ts'), import('../http/graceful-stop.ts'), import('../http/metrics.ts')]);
  // Awaited again by startServing, which reports a failure; this copy only starts the work.
  loading.catch(() => {});
  return loading;
}

export interface Listening {
  url: string;
  host: string;
  port: number;
  database: Database['engine'];
  /** With BALCAO_METRICS_PORT: where /metrics is served (in the --workers primary, aggregated). */
  metrics_url?: string;
}

/**
 * Serves `database` once `ready` (the database open and migrated) resolves; resolves once listening.
 * The app is built before that wait, so building it overlaps the embedded engine's start.
 * Closes everything on a signal.
 */
export async function startServing(
  config: Config,
  database: Database,
  json: boolean,
  ready: Promise<unknown> = Promise.resolve(),
): Promise<Listening> {
  const [{ buildApp }, { onStopSignals, stopGracefully }, { listenMetrics, shareWithPrimary }] = await loadServing();
  const app = await buildApp({
    config,
    database,
    processMetrics: true,
    logger: await logOutput(config.logLevel, json),
  } as Parameters<typeof buildApp>[0]);
  await ready;
  // A worker's metrics are scraped through the primary, which sums them (serve-workers.ts): one address for all.
  if (cluster.isWorker) shareWithPrimary(app.metrics);
  // Before the public listener: a metrics port already taken stops the start before any request is taken in.
  const metrics =
    config.metricsPort === undefined || cluster.isWorker
      ? undefined
      : await listenMetrics(app.metrics, config.metricsHost, config.metricsPort);
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await metrics?.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  onStopSignals((signal) => {
    // A process started on the same embedded database meanwhile waits for this one to exit (data-dir-lock.ts).
    announceStop(new Date(Date.now() + config.shutdownTimeoutMs));
    app.log.info(
      { signal, graceMs: config.shutdownGraceMs, timeoutMs: config.shutdownTimeoutMs },
      'stopping: not ready; finishing the requests in flight',
    );
    void stopGracefully(app, {
      timeoutMs: config.shutdownTimeoutMs,
      graceMs: config.shutdownGraceMs,
      closeAfter: async () => {
        await metrics?.close();
        await database.close();
      },
    });
  });
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    host: config.host,
    port,
    database: database.engine,
    ...(metrics ? { metrics_url: metrics.url } : {}),
  };
}

export async function openMigrated(config: Config, holder: string): Promise<Database> {
  const [{ openDatabase }, { prepareDatabase }] = await Promise.all([
    import('../infra/db/engine/database.ts'),
    import('../events/capture/setup.ts'),
  ]);
  const database = await openDatabase(config, holder);
  try {
    await whenDatabaseAnswers(() => prepareDatabase(database), sayWaiting(holder));
    return database;
  } catch (err) {
    await database.close();
    throw err;
  }
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('migrate the schema if needed, then serve the API')
    .option('--json', 'print one JSON object when listening (logs go to stderr)')
    .option('--workers <n>', 'worker processes sharing the port (PostgreSQL and REDIS_URL only); default BALCAO_WORKERS or 1')
    .action(async (flags: { json?: boolean; workers?: string }) => {
      const { config } = commandContext();
      const workers = flags.workers === undefined ? config.workers : parseWorkerCount(flags.workers, '--workers');
      if (workers > 1 || cluster.isWorker) {
        const { serveAsWorker, serveWithWorkers } = await import('./serve-workers.ts');
        if (cluster.isWorker) {
          // The primary has migrated: a worker only opens the database and serves.
          loadServing();
          const { openDatabase } = await import('../infra/db/engine/database.ts');
          return serveAsWorker(async () => ({ ...(await startServing(config, await openDatabase(config, 'balcao serve'), true)) }));
        }
        return serveWithWorkers(config, workers, !!flags.json, async () => (await openMigrated(config, 'balcao serve')).close());
      }
      // First the embedded engine's compile, which V8 runs on background threads, then the app's modules
      // on the main thread: started after them, the compile used to finish after the app was built.
      if (!config.databaseUrl) compileEngine().catch(() => {}); // a failure is reported by the open
      loadServing();
      const [{ startDatabase }, { prepareDatabase }] = await Promise.all([
        import('../infra/db/engine/database.ts'),
        import('../events/capture/setup.ts'),
      ]);
      const { database, open } = await startDatabase(config, 'balcao serve');
      const migrated = open.then(() => whenDatabaseAnswers(() => prepareDatabase(database), sayWaiting('balcao serve')));
      // Awaited by startServing before it listens; until then a failure must not count as unhandled.
      migrated.catch(() => {});
      try {
        const listening = await startServing(config, database, !!flags.json, migrated);
        if (flags.json) output(true, listening, () => '');
      } catch (err) {
        await database.close();
        throw err;
      }
    });
}
