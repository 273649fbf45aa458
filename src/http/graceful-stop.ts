// Stopping a serving process without dropping work (docs/operations.md, "Graceful stop"): readiness
// turns false at once; the listener stays open for a grace period (a balancer notices, the listen
// backlog is taken in); then it closes, what already arrived is read, idle keep-alive connections
// close, requests in flight finish (their connections close after the response), then the
// rate-limit store and the database pools close. Bounded: past `timeoutMs` the process exits
// anyway; a second signal exits at once. Each `--workers` worker runs the same steps.
import net from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface Lifecycle {
  /** True from the first stop signal on. */
  stopping: boolean;
}

export interface StopOptions {
  /** What else to close once the server is closed (the database pools). */
  closeAfter?: () => Promise<void>;
  /** Longest the whole stop may take (config.shutdownTimeoutMs), the grace included. */
  timeoutMs: number;
  /** How long the listener stays open, unready, before it closes (config.shutdownGraceMs). */
  graceMs?: number;
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
    // Still accepting while unready: connections already in the kernel's listen backlog, and those a
    // balancer sends before its next health check, are taken in and served (with Connection: close).
    await new Promise((resolve) => setTimeout(resolve, options.graceMs ?? 0));
    stopAccepting(app);
    // Fastify's close (below) closes every connection Node counts as idle, and Node counts as idle a
    // connection whose request has arrived in the socket but has not been read yet: that client would get a
    // reset. Two turns of the event loop read and parse what arrived before the listener closed, which
    // makes those requests in flight; only connections with nothing sent are left idle.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
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

/**
 * Closes the listening socket only. Node's http `server.close()` would also close idle connections at once
 * (see above); Fastify's close calls it later, which then just waits for the connections to finish.
 */
function stopAccepting(app: FastifyInstance): void {
  if (app.server.listening) net.Server.prototype.close.call(app.server);
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
