// The OpenTelemetry SDK behind tracing.ts, loaded only when traces are on: a tracer provider per app with
// its sampler, a batch processor and the OTLP/HTTP exporter of the configured protocol. The W3C trace
// context is read from requests and written on webhook deliveries. A span never carries a statement's values,
// a header's value, a URL's query, a client's address or a body (tracing.ts says why).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  type Attributes,
  context,
  createContextKey,
  DiagLogLevel,
  defaultTextMapSetter,
  diag,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVICE_NAME,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { FastifyBaseLogger } from 'fastify';
import type { TracesConfig } from './traces-config.ts';
import type { RequestListener, StatementTracer, Tracing } from './tracing-types.ts';

/** The app's tracer, carried by the context of its requests and deliveries: the statements of a request are traced
 *  by the tracer of the app serving it (tests run several apps in one process). */
const TRACER = createContextKey('balcao tracer');
const SERVER_SPAN = Symbol('balcao server span');

type TracedMessage = IncomingMessage & { [SERVER_SPAN]?: Span };

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

let contextManagerSet = false;

/** One AsyncLocalStorage context manager for the process: a span stays active across the awaits of its work. */
function ensureContextManager(): void {
  if (contextManagerSet) return;
  contextManagerSet = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/** How often the SDK's own troubles (an export failed: the collector is away) may reach the log. */
const SDK_WARNING_EVERY_MS = 60_000;

/** The SDK's failures as warnings of the app's log, at most one a minute: a collector that is away costs dropped
 *  spans and a line now and then, never a request. The SDK's handlers are the process's: the last app's log wins. */
function reportSdkTroubles(log: FastifyBaseLogger): void {
  let lastAt = 0;
  const warn = (message: unknown) => {
    const now = Date.now();
    if (now - lastAt < SDK_WARNING_EVERY_MS) return;
    lastAt = now;
    log.warn({ cause: String((message as Error | null)?.message ?? message).slice(0, 300) }, 'traces: spans were not exported');
  };
  setGlobalErrorHandler(warn);
  const quiet = () => {};
  diag.setLogger(
    { error: warn, warn, info: quiet, debug: quiet, verbose: quiet },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}

function samplerOf(config: TracesConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Headers, timeout and compression of the exporter are the SDK's to read from the process's environment
 *  (OTEL_EXPORTER_OTLP_HEADERS and the like); the address and protocol come from the app's configuration. */
function exporterOf(config: TracesConfig) {
  return config.protocol === 'http/json' ? new OtlpJsonExporter({ url: config.url }) : new OtlpProtobufExporter({ url: config.url });
}

export function createTracing(config: TracesConfig, log: FastifyBaseLogger): { tracing: Tracing; statements: StatementTracer } {
  ensureContextManager();
  reportSdkTroubles(log);
  const detected = detectResources({ detectors: [envDetector] });
  const serviceName = config.serviceName ?? (detected.attributes[ATTR_SERVICE_NAME] as string | undefined) ?? 'balcao';
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(detected)
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName })),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporterOf(config), config.batchDelayMs ? { scheduledDelayMillis: config.batchDelayMs } : {})],
  });
  const tracer = provider.getTracer('balcao');
  const propagator = new W3CTraceContextPropagator();
  const appContext = ROOT_CONTEXT.setValue(TRACER, tracer);
  log.info({ url: config.url, protocol: config.protocol, sampler: config.sampler, service: serviceName }, 'traces: exporting');

  const tracing: Tracing = {
    childSpan(name, attributes, work) {
      const active = context.active();
      const parent = trace.getSpan(active);
      const owner = active.getValue(TRACER) as Tracer | undefined;
      if (!owner || !parent?.isRecording()) return work(undefined);
      const span = owner.startSpan(name, { attributes }, active);
      return context.with(trace.setSpan(active, span), () => endAfter(span, work(span)));
    },

    clientRootSpan(name, attributes, work) {
      const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, root: true }, appContext);
      return context.with(trace.setSpan(appContext, span), () => endAfter(span, work(span)));
    },

    injectContext(headers) {
      propagator.inject(context.active(), headers, defaultTextMapSetter);
    },

    serveInSpans(listener: RequestListener): RequestListener {
      return function serveInSpan(this: unknown, request, response) {
        const parent = propagator.extract(appContext, request.headers, headerGetter);
        const method = request.method ?? 'GET';
        // Named by method alone until the route is known (request-tracing.ts names it `METHOD /route/{template}`).
        const span = tracer.startSpan(
          method,
          { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_SCHEME]: 'http' } },
          parent,
        );
        (request as TracedMessage)[SERVER_SPAN] = span;
        response.once('close', () => {
          const status = response.statusCode;
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          // A response never finished (the client went away) is not the server's error unless it said 5xx.
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
        context.with(trace.setSpan(parent, span), listener, this, request, response);
      };
    },

    serverSpanOf: (request) => (request as TracedMessage)[SERVER_SPAN],

    traceIdOf(request) {
      const span = (request as TracedMessage)[SERVER_SPAN] ?? trace.getSpan(context.active());
      return span?.spanContext().traceId;
    },

    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        log.warn({ err }, 'traces: the last spans could not be sent');
      }
    },
  };

  const statements: StatementTracer = {
    statement(sqlText, run) {
      const active = context.active();
      const owner = active.getValue(TRACER) as Tracer | undefined;
      if (!owner || !trace.getSpan(active)?.isRecording()) return run();
      const shape = statementShape(sqlText);
      const span = owner.startSpan(shape.name, { kind: SpanKind.CLIENT, attributes: shape.attributes }, active);
      return endAfter(span, run());
    },
  };
  return { tracing, statements };
}

/** Ends `span` once `work` settles; a failure marks it with its kind only (a message may quote a value). */
function endAfter<T>(span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      markFailed(span, err);
      span.end();
      throw err;
    },
  );
}

export function markFailed(span: Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  span.setAttribute('error.type', typeof code === 'string' ? code : ((err as Error | null)?.name ?? 'Error'));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

const MAIN_KEYWORDS = new Set(['select', 'insert', 'update', 'delete', 'merge', 'values']);
const TABLE_KEYWORDS = new Set(['from', 'into', 'update']);

const CHANGES = new Set(['INSERT', 'UPDATE', 'DELETE']);

/**
 * The statement's kind and first table, read outside every parenthesis: `with … as (…) insert into sales …` is an
 * INSERT of sales, and `extract(epoch from at)` names no table. A SELECT of no table after CTEs that write is named
 * by the first of them: `with inserted as (insert into customers …), … select count(*) …` is an INSERT of customers
 * (a creation carrying its write's tail). Anything else (BEGIN, SET, COMMIT) is its first word.
 */
function mainClause(text: string): { operation: string; table: string | undefined } {
  let depth = 0;
  let operation: string | undefined;
  let first: string | undefined;
  /** The keyword a table name may follow next (`from`, `into`, `update`), or none. */
  let before: string | undefined;
  /** The last word read outside every parenthesis, and the bodies of the CTEs (`as (…)`) read so far. */
  let previous: string | undefined;
  let cteAt: number | undefined;
  const ctes: string[] = [];
  const words = /"[^"]*"|[a-z_][\w.]*|[()]/gi;
  for (let match = words.exec(text); match; match = words.exec(text)) {
    const word = match[0];
    if (word === '(') {
      if (depth === 0 && previous === 'as') cteAt = words.lastIndex;
      depth += 1;
    } else if (word === ')') {
      depth = Math.max(0, depth - 1);
      if (depth === 0 && cteAt !== undefined) {
        ctes.push(text.slice(cteAt, match.index));
        cteAt = undefined;
      }
    }
    if (depth > 0 || word === ')') {
      before = undefined;
      continue;
    }
    const lower = word.toLowerCase();
    previous = lower;
    first ??= lower;
    if (before) {
      if (lower === 'only') continue;
      // After FROM, a function (`from unnest(…)`) is no table; after INTO, the parenthesis is the column list.
      const call = before === 'from' && text.slice(words.lastIndex).trimStart().startsWith('(');
      if (!call && !MAIN_KEYWORDS.has(lower)) return { operation: operation as string, table: word.replace(/"/g, '') };
      before = undefined;
      continue;
    }
    if (!operation && MAIN_KEYWORDS.has(lower)) {
      operation = lower === 'values' ? 'SELECT' : lower.toUpperCase();
      if (lower === 'update') before = lower;
      continue;
    }
    if (operation && TABLE_KEYWORDS.has(lower)) before = lower;
  }
  if (operation === 'SELECT')
    for (const cte of ctes) {
      const written = mainClause(cte);
      if (CHANGES.has(written.operation) && written.table) return written;
    }
  return { operation: operation ?? first?.toUpperCase() ?? 'SQL', table: undefined };
}

interface StatementShape {
  name: string;
  attributes: Attributes;
}

/** Shapes by SQL text: a service runs a few hundred distinct texts, each shaped once. */
const shapes = new Map<string, StatementShape>();
const MAX_SHAPES = 2_000;
const MAX_STATEMENT_CHARS = 4_096;

/** The statement's span name (`SELECT customers`) and attributes: its text with parameters as placeholders, as
 *  Kysely compiled it, and any quoted literal replaced by `?` in case a value was ever written into the text. */
export function statementShape(sqlText: string): StatementShape {
  let shape = shapes.get(sqlText);
  if (shape) return shape;
  if (shapes.size >= MAX_SHAPES) shapes.clear();
  const text = sqlText
    .replace(/'(?:[^']|'')*'/g, "'?'")
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_STATEMENT_CHARS);
  const { operation, table } = mainClause(text);
  const attributes: Attributes = {
    'db.system': 'postgresql',
    'db.system.name': 'postgresql',
    'db.operation.name': operation,
    'db.statement': text,
    'db.query.text': text,
  };
  if (table) attributes['db.collection.name'] = table;
  shape = { name: table ? `${operation} ${table}` : operation, attributes };
  shapes.set(sqlText, shape);
  return shape;
}
