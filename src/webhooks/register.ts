// Plugs events and webhooks into the app: the change-feed routes and their long-poll bus, the
// webhook endpoint routes, and the delivery worker, started once the app listens (building the
// app alone, as the OpenAPI dump does, touches no database) and stopped, attempts in flight
// finished or released, when it closes.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Database } from '../infra/db/engine/database.ts';
import type { ChangeCapture } from '../events/capture/change-capture.ts';
import { EventBus } from '../events/event-bus.ts';
import { readRunner } from '../infra/db/replicas/read-router.ts';
import { registerEventRoutes } from '../events/event-routes.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { registerWebhookEndpointRoutes } from './endpoint-routes.ts';
import { registerWebhookMetrics } from './webhook-metrics.ts';

export function registerEvents(app: FastifyInstance, deps: { config: Config; database: Database; capture: ChangeCapture }): void {
  const { config, database, capture } = deps;
  const bus = new EventBus(database);
  const worker = new DeliveryWorker(database, config, app.log, app.tracing);
  registerEventRoutes(app, readRunner(database), bus, capture);
  registerWebhookEndpointRoutes(app, database.db, config);
  registerWebhookMetrics(app.metrics, database, worker, config.readinessTimeoutMs);
  // Capture is ready before the server listens (its first writes are captured); the rest once it listens.
  app.addHook('onReady', async () => {
    await capture.start();
  });
  app.addHook('onListen', async () => {
    await bus.start();
    await worker.start();
  });
  app.addHook('preClose', async () => {
    await bus.close();
    await capture.close();
    await worker.close();
  });
}
