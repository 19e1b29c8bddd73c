// The request counter and histogram tallied by src/metrics/requests.ts must expose exactly
// what prom-client's own Counter and Histogram expose for the same observations: the text of a
// scrape, the JSON a worker sends its primary, and the sum over two workers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import client from 'prom-client';
import { requestMetrics } from '../../src/metrics/requests.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const NAMES = { total: 'x_requests_total', duration: 'x_request_duration_seconds' };
const HELP = { total: 'Requests.', duration: 'Durations.' };

type Observation = [method: string, route: string, status: number, seconds: number];

function theirs(observations: Observation[]): client.Registry {
  const registry = new client.Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const total = new client.Counter({
    name: NAMES.total,
    help: HELP.total,
    labelNames,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: NAMES.duration,
    help: HELP.duration,
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  for (const [method, route, status, seconds] of observations) {
    const labels = { method, route, status: String(status) };
    total.inc(labels);
    duration.observe(labels, seconds);
  }
  return registry;
}

function ours(observations: Observation[]): client.Registry {
  const registry = new client.Registry();
  const metrics = requestMetrics(registry, NAMES, HELP, BUCKETS);
  for (const observation of observations) metrics.observe(...observation);
  return registry;
}

const observation = fc.tuple(
  fc.constantFrom('GET', 'HEAD', 'POST'),
  fc.constantFrom('/api/auth/check', '/api/group/:id', 'unmatched'),
  fc.constantFrom(200, 403, 404, 503),
  fc.oneof(fc.constantFrom(...BUCKETS, 0, 11, 1e-9), fc.double({ min: 0, max: 20, noNaN: true })),
);

test('the exposition equals prom-client for the same observations (property)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
      assert.equal(await ours(observations).metrics(), await theirs(observations).metrics());
      // What a worker sends its primary, as it travels (JSON over the IPC channel).
      const json = async (registry: client.Registry) =>
        JSON.parse(JSON.stringify(await registry.getMetricsAsJSON()));
      assert.deepEqual(await json(ours(observations)), await json(theirs(observations)));
    }),
  );
});

test('two workers add up as prom-client adds its own (WORKERS)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(observation, { maxLength: 30 }),
      fc.array(observation, { maxLength: 30 }),
      async (a, b) => {
        const sum = async (make: (o: Observation[]) => client.Registry) =>
          client.AggregatorRegistry.aggregate([
            await make(a).getMetricsAsJSON(),
            await make(b).getMetricsAsJSON(),
          ]).metrics();
        assert.equal(await sum(ours), await sum(theirs));
      },
    ),
  );
});
