// The per-request metrics: `clubhouse_http_requests_total` and `clubhouse_http_request_duration_seconds`,
// tallied in plain numbers per (method, route, status) and handed to prom-client's registry only when
// it is scraped. prom-client's own Counter.inc and Histogram.observe validate and hash the label
// object on every call (≈ 1.1–1.9 µs measured, a few per cent of a cached check); here a request
// costs a few Map lookups on the strings it already has (no key built: a template-string key per
// request cost as much as the rest of the raw path's bookkeeping) and a few additions. The objects
// below are prom-client "metrics" (name, help, type, get()), so the registry renders them and
// AggregatorRegistry sums them across WORKERS exactly as it does its own;
// test/ops/request-metrics.test.ts proves the exposition equal to prom-client's Counter and
// Histogram fed the same observations.
import type client from 'prom-client';

/** One (method, route, status): a count, a sum, and the count per bucket (not cumulative). */
interface Tally {
  readonly labels: { readonly method: string; readonly route: string; readonly status: string };
  count: number;
  sum: number;
  readonly buckets: Float64Array;
}

type Value = { labels: Record<string, string | number>; value: number; metricName?: string; exemplar?: null };

/** The HTTP edge's view of the metrics (http/edge.ts, http/raw-reads.ts): one answered request. */
export interface RequestMetrics {
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

/** The two metrics' tally: one request observed by its method, route label, status and duration. */
interface RequestTally {
  observe(method: string, route: string, status: number, seconds: number): void;
}

/** Registers both metrics in `registry`; `buckets` are the histogram's upper bounds, ascending. */
export function requestMetrics(
  registry: client.Registry,
  names: { readonly total: string; readonly duration: string },
  help: { readonly total: string; readonly duration: string },
  buckets: readonly number[],
): RequestTally {
  // Every tally in the order first seen (the exposition's order), and the same tallies indexed by
  // method, route and status, so that a request finds its own without building a key.
  const tallies: Tally[] = [];
  const index = new Map<string, Map<string, Map<number, Tally>>>();
  const metric = (name: string, helpText: string, type: 'counter' | 'histogram', values: () => Value[]) =>
    ({
      name,
      help: helpText,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help: helpText, type, aggregator: 'sum', values: values() }),
    }) as unknown as client.Metric;
  registry.registerMetric(
    metric(names.total, help.total, 'counter', () =>
      tallies.map((t) => ({ labels: { ...t.labels }, value: t.count })),
    ),
  );
  registry.registerMetric(
    metric(names.duration, help.duration, 'histogram', () => {
      const values: Value[] = [];
      for (const t of tallies) {
        let cumulative = 0;
        buckets.forEach((le, i) => {
          cumulative += t.buckets[i]!;
          values.push({
            labels: { le, ...t.labels },
            value: cumulative,
            metricName: `${names.duration}_bucket`,
            exemplar: null,
          });
        });
        values.push(
          {
            labels: { le: '+Inf', ...t.labels },
            value: t.count,
            metricName: `${names.duration}_bucket`,
            exemplar: null,
          },
          { labels: { ...t.labels }, value: t.sum, metricName: `${names.duration}_sum` },
          { labels: { ...t.labels }, value: t.count, metricName: `${names.duration}_count` },
        );
      }
      return values;
    }),
  );
  return {
    observe(method, route, status, seconds) {
      let routes = index.get(method);
      if (routes === undefined) {
        routes = new Map();
        index.set(method, routes);
      }
      let statuses = routes.get(route);
      if (statuses === undefined) {
        statuses = new Map();
        routes.set(route, statuses);
      }
      let tally = statuses.get(status);
      if (tally === undefined) {
        tally = {
          labels: { method, route, status: String(status) },
          count: 0,
          sum: 0,
          buckets: new Float64Array(buckets.length),
        };
        statuses.set(status, tally);
        tallies.push(tally);
      }
      tally.count++;
      tally.sum += seconds;
      // prom-client's bucket: the first bound ≥ the value; beyond the last only +Inf (the count).
      for (let i = 0; i < buckets.length; i++) {
        if (seconds <= (buckets[i] as number)) {
          tally.buckets[i] = (tally.buckets[i] as number) + 1;
          break;
        }
      }
    },
  };
}
