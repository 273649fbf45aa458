// The OpenTelemetry traces settings, read from the standard OTEL_* variables of the environment given to
// loadConfig (docs/operations.md, "Traces"). Parsing only: the SDK itself is loaded when traces are on.
// Unset, or OTEL_TRACES_EXPORTER=none: off, and nothing of OpenTelemetry is loaded.

export type TracesProtocol = 'http/protobuf' | 'http/json';

export type TracesSampler =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export interface TracesConfig {
  /** Where the spans are sent (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces). */
  readonly url: string;
  readonly protocol: TracesProtocol;
  /** OTEL_SERVICE_NAME; unset: the service.name of OTEL_RESOURCE_ATTRIBUTES, else `balcao`. */
  readonly serviceName: string | undefined;
  readonly sampler: TracesSampler;
  /** The ratio of the *traceidratio samplers (OTEL_TRACES_SAMPLER_ARG, default 1). */
  readonly samplerRatio: number;
  /** OTEL_BSP_SCHEDULE_DELAY: how long spans wait in the batch before they are sent (the SDK's default, 5 s, when unset). */
  readonly batchDelayMs: number | undefined;
}

const SAMPLERS: readonly TracesSampler[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/** The OTLP/HTTP collector's default address (the specification's). */
const DEFAULT_ENDPOINT = 'http://localhost:4318';

export function parseTracesConfig(env: NodeJS.ProcessEnv): TracesConfig | undefined {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.length === 0 || exporters.every((e) => e === 'none')) return undefined;
  const unknown = exporters.filter((e) => e !== 'otlp' && e !== 'none');
  if (unknown.length) throw new Error(`OTEL_TRACES_EXPORTER must be otlp or none, got "${env.OTEL_TRACES_EXPORTER}"`);

  const protocolText = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (protocolText !== 'http/protobuf' && protocolText !== 'http/json')
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported), got "${protocolText}"`);

  const samplerText = (env.OTEL_TRACES_SAMPLER || 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.includes(samplerText as TracesSampler))
    throw new Error(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${env.OTEL_TRACES_SAMPLER}"`);
  const sampler = samplerText as TracesSampler;
  const ratioText = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const samplerRatio = ratioText ? Number(ratioText) : 1;
  if (sampler.endsWith('traceidratio') && !(samplerRatio >= 0 && samplerRatio <= 1))
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "${env.OTEL_TRACES_SAMPLER_ARG}"`);

  return Object.freeze({
    url: tracesUrl(env),
    protocol: protocolText,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || undefined,
    sampler,
    samplerRatio,
    batchDelayMs: batchDelay(env.OTEL_BSP_SCHEDULE_DELAY),
  });
}

/** The signal's own endpoint is used as it is; the base endpoint gets the traces path (OTLP/HTTP's rule). */
function tracesUrl(env: NodeJS.ProcessEnv): string {
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const url = own || `${(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  if (!/^https?:\/\//.test(url)) throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "${url}"`);
  return url;
}

function batchDelay(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1)
    throw new Error(`OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds above 0, got "${raw}"`);
  return ms;
}
