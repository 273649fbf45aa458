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
  /** The open client connections (a stop decides which of them may close). */
  connections: Set<net.Socket>;
  /** Connections accepted since start (the stop logs it, with the open ones, when the listener closes). */
  accepted: number;
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
  const lifecycle: Lifecycle = { stopping: false, connections: new Set(), accepted: 0 };
  app.decorate('lifecycle', lifecycle);
  // Once per connection, not per request.
  app.server.on('connection', (socket: net.Socket) => {
    lifecycle.accepted += 1;
    lifecycle.connections.add(socket);
    socket.once('close', () => lifecycle.connections.delete(socket));
  });
  // Callback style, as the other per-request hooks: no promise per request for a flag check.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (lifecycle.stopping) reply.header('connection', 'close');
    done(null, payload);
  });
  // However the app is closed (app.close() too), the requests still in flight close their connections after
  // the response: a kept-alive one would otherwise hold the close for the whole keep-alive timeout.
  app.addHook('preClose', (done) => {
    lifecycle.stopping = true;
    done();
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
    await takeInBacklog(app.lifecycle);
    stopAccepting(app);
    app.log.info({ accepted: app.lifecycle.accepted, open: app.lifecycle.connections.size }, 'stopping: listener closed');
    // Node's own close would now close every connection it counts as idle, and it counts as idle a
    // connection whose request has not been read yet (still in the socket, or not sent yet by a client that
    // has just connected): its client would get a reset. Instead: two turns of the event loop read and parse
    // what already arrived, then only connections kept alive after a response close; connections that have
    // not been answered yet are left to send their request (answered with Connection: close), for a bound.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    await closeIdle(app.lifecycle.connections, Math.max(options.graceMs ?? 0, FIRST_REQUEST_WAIT_MS));
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
 * Turns of the event loop until one accepts no new connection. A timer runs before the loop's poll phase, so
 * after a busy stretch (the embedded database works on this thread) the grace timer can fire while the
 * backlog still holds connections the kernel accepted long ago: closing the listener then would reset them.
 * setImmediate runs after the poll phase, which accepts everything pending.
 */
async function takeInBacklog(lifecycle: Lifecycle): Promise<void> {
  let seen: number;
  do {
    seen = lifecycle.accepted;
    await new Promise((resolve) => setImmediate(resolve));
  } while (lifecycle.accepted !== seen);
}

/** Least time a connection accepted before the listener closed gets to send its first request. */
const FIRST_REQUEST_WAIT_MS = 1_000;

/** A response is being written on the connection (Node's own field, set while a response is pending). */
const answering = (socket: net.Socket) => !!(socket as net.Socket & { _httpMessage?: unknown })._httpMessage;

/**
 * Closes the idle kept-alive connections (answered before, nothing pending) at once; a connection that was
 * accepted but has had no answer yet (bytesWritten 0) may still be sending its request: it is waited for until
 * it has one, or for `firstRequestMs` (then it has sent nothing for that long and closes).
 */
async function closeIdle(connections: Set<net.Socket>, firstRequestMs: number): Promise<void> {
  const deadline = Date.now() + firstRequestMs;
  for (;;) {
    let waiting = false;
    for (const socket of connections) {
      // Closes itself after its response (Connection: close), or is already closing: left alone, so
      // nothing still in its write buffer is lost.
      if (answering(socket) || socket.writableEnded || socket.writableLength > 0) continue;
      if (socket.bytesWritten > 0 || Date.now() >= deadline) socket.destroy();
      else waiting = true;
    }
    if (!waiting) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Decide after a poll phase, not in the timers phase before it: a request that arrived while the loop
    // was busy is read first, so its connection is not taken for one that never sent anything.
    await new Promise((resolve) => setImmediate(resolve));
  }
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
