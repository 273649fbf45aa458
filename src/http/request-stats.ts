// Request counts and latencies for /metrics, counted as plain numbers on the request path and turned
// into Prometheus series only when scraped. prom-client validates and hashes the labels on every
// `inc`/`observe`, which the profile of GET /v1/me put at 5% of the request's CPU; here a request
// costs two Map lookups and a few additions (docs/performance.md).

/** Seconds; the upper bounds of the latency histogram's buckets. */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

interface CountSeries {
  labels: { operation: string; method: string; status: string };
  count: number;
}

interface DurationSeries {
  operation: string;
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

type MetricValue = { metricName?: string; labels: Record<string, string | number>; value: number };

/** The shape prom-client's registry reads from a metric (`get()`); see Registry#registerMetric. */
export interface CollectedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: MetricValue[] }>;
}

export class RequestStats {
  private readonly counts = new Map<string, CountSeries>();
  private readonly durations = new Map<string, DurationSeries>();

  record(operation: string, method: string, status: number, seconds: number): void {
    const key = `${operation} ${method} ${status}`;
    let counted = this.counts.get(key);
    if (!counted) {
      counted = { labels: { operation, method, status: String(status) }, count: 0 };
      this.counts.set(key, counted);
    }
    counted.count += 1;
    let timed = this.durations.get(operation);
    if (!timed) {
      timed = { operation, buckets: new Array(DURATION_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.durations.set(operation, timed);
    }
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] as number)) bucket++;
    timed.buckets[bucket] = (timed.buckets[bucket] as number) + 1;
    timed.sum += seconds;
    timed.count += 1;
  }

  /** `balcao_http_requests_total`. */
  counter(name: string, help: string): CollectedMetric {
    const read = () => [...this.counts.values()].map((s) => ({ labels: s.labels, value: s.count }));
    return collected(name, help, 'counter', read);
  }

  /** `balcao_http_request_duration_seconds` (cumulative buckets, sum and count, per operation). */
  histogram(name: string, help: string): CollectedMetric {
    const read = () =>
      [...this.durations.values()].flatMap((s) => {
        let cumulative = 0;
        const buckets = s.buckets.map((n, i) => {
          cumulative += n;
          const le = i < DURATION_BUCKETS.length ? (DURATION_BUCKETS[i] as number) : '+Inf';
          return { metricName: `${name}_bucket`, labels: { le, operation: s.operation }, value: cumulative };
        });
        return [
          ...buckets,
          { metricName: `${name}_sum`, labels: { operation: s.operation }, value: s.sum },
          { metricName: `${name}_count`, labels: { operation: s.operation }, value: s.count },
        ];
      });
    return collected(name, help, 'histogram', read);
  }
}

function collected(name: string, help: string, type: 'counter' | 'histogram', read: () => MetricValue[]): CollectedMetric {
  return { name, help, type, aggregator: 'sum', get: async () => ({ name, help, type, aggregator: 'sum', values: read() }) };
}
