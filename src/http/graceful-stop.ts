// Stopping a serving process without dropping work: readiness turns false at once, the listener
// closes, requests in flight finish (keep-alive connections close after their current response),
// then the rate-limit store and the database pools close. Bounded: past `timeoutMs` the process
// exits anyway; a second signal exits at once. The multi-worker runner calls the same functions.
import type { FastifyInstance } from 'fastify';

export interface Lifecycle {
  /** True from the first stop signal on. */
  stopping: boolean;
}

export interface StopOptions {
  /** What else to close once the server is closed (the database pools). */
  closeAfter?: () => Promise<void>;
  /** Longest the whole stop may take (config.shutdownTimeoutMs). */
  timeoutMs: number;
  /** Ends the process; tests and workers may pass their own. */
  exit?: (code: number) => void;
}

/** Adds the stopping flag and the "close after this response" rule to an app; call it while building. */
export function addLifecycle(app: FastifyInstance): Lifecycle {
  const lifecycle: Lifecycle = { stopping: false };
  app.decorate('lifecycle', lifecycle);
  // Callback style, as the other per-request hooks: no promise per request for a flag check.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (lifecycle.stopping) reply.header('connection', 'close');
    done(null, payload);
  });
  return lifecycle;
}

/** Stops the app gracefully, then exits 0 (1 when the bound ran out or closing failed). */
export async function stopGracefully(app: FastifyInstance, options: StopOptions): Promise<void> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  app.lifecycle.stopping = true;
  const timer = setTimeout(() => {
    app.log.error({ timeoutMs: options.timeoutMs }, 'graceful stop ran out of time; exiting with requests still open');
    exit(1);
  }, options.timeoutMs);
  timer.unref();
  let code = 0;
  try {
    await app.close();
    await options.closeAfter?.();
  } catch (err) {
    app.log.error({ err }, 'graceful stop failed');
    code = 1;
  } finally {
    clearTimeout(timer);
  }
  app.log.info({ code }, 'stopped');
  exit(code);
}

/** SIGTERM/SIGINT start `stop` once; a second signal exits at once. */
export function onStopSignals(stop: (signal: NodeJS.Signals) => void, exit: (code: number) => void = (code) => process.exit(code)): void {
  let signalled = false;
  const handle = (signal: NodeJS.Signals) => {
    if (signalled) {
      exit(1);
      return;
    }
    signalled = true;
    stop(signal);
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: Lifecycle;
  }
}
