// OpenTelemetry traces (docs/operations.md, "Traces"): what the rest of the code sees of them. Off (the default),
// nothing of OpenTelemetry is loaded and nothing here runs per request: the callers hold `undefined` and take
// their untraced path, chosen once when the app is built. On, `startTracing` loads the SDK (otel-tracing.ts).
//
// What a span may carry: route templates, operation ids, statuses, statement shapes (the SQL text with its
// parameters as placeholders), ids of Balcão's own records. Never: a header's value (Authorization, a key, an
// Idempotency-Key), a URL's query or a webhook endpoint's URL, a client's IP address, a body, a statement's values.
import type { FastifyBaseLogger } from 'fastify';
import type { TracesConfig } from './traces-config.ts';
import type { StatementTracer, Tracing } from './tracing-types.ts';

export type { RequestListener, StatementTracer, Tracing } from './tracing-types.ts';

let statements: StatementTracer | undefined;
let started = 0;

/** The statement tracer while any app of this process traces; undefined (the usual case) costs one read. */
export const statementTracer = (): StatementTracer | undefined => statements;

/** Loads the SDK and starts exporting; one per app (each `--workers` worker has its own). */
export async function startTracing(config: TracesConfig, log: FastifyBaseLogger): Promise<Tracing> {
  const { createTracing } = await import('./otel-tracing.ts');
  const made = createTracing(config, log);
  started += 1;
  statements = made.statements;
  let stopped = false;
  return {
    ...made.tracing,
    async shutdown() {
      if (stopped) return;
      stopped = true;
      started -= 1;
      if (started === 0) statements = undefined;
      await made.tracing.shutdown();
    },
  };
}
