// What the rest of the code sees of traces (tracing.ts), as types only: the SDK behind them (otel-tracing.ts) is
// loaded only when traces are on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Span } from '@opentelemetry/api';

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

export interface Tracing {
  /**
   * Runs `work` in a new span, child of the active span and active itself while `work` runs. Outside a traced
   * request or delivery (no active span, or one not sampled) no span is made: `work` gets undefined.
   */
  childSpan<T>(name: string, attributes: Attributes, work: (span: Span | undefined) => Promise<T>): Promise<T>;
  /** Runs `work` in a new trace's first span, of kind CLIENT (an outgoing call, as a webhook delivery attempt). */
  clientRootSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T>;
  /** Adds the active span's `traceparent` (and `tracestate`) to `headers`, for an outgoing request. */
  injectContext(headers: Record<string, string>): void;
  /** The server's request listener, each request run inside its server span (which continues an incoming
   *  `traceparent`), ended when its response closes. */
  serveInSpans(listener: RequestListener): RequestListener;
  /** The server span of a request `serveInSpans` took in (none for one Fastify made itself, as a batch's operation). */
  serverSpanOf(request: IncomingMessage): Span | undefined;
  /** The trace id of the request's span, or of the active one. */
  traceIdOf(request: IncomingMessage): string | undefined;
  /** Sends the spans still buffered, then stops the exporter (the app's close). */
  shutdown(): Promise<void>;
}

/** Traces each database statement run inside a traced span (src/infra/db/engine/traced-driver.ts). */
export interface StatementTracer {
  statement<T>(sqlText: string, run: () => Promise<T>): Promise<T>;
}
