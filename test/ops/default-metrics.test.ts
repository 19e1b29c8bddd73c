// Node's process metrics on /metrics (contract §6): every one of prom-client's default metrics but
// the GC-duration histogram, measured at 11 % of a cached check's CPU (src/metrics/metrics.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import client from 'prom-client';
import { createMetrics, registerDefaultMetrics } from '../../src/metrics/metrics.ts';

/** The metric names a registry exposes. */
async function names(registry: client.Registry): Promise<Set<string>> {
  return new Set((await registry.getMetricsAsJSON()).map((metric) => metric.name));
}

test('every prom-client default metric but nodejs_gc_duration_seconds, as collectDefaultMetrics makes them', async () => {
  const all = new client.Registry();
  client.collectDefaultMetrics({ register: all });
  const expected = await names(all);
  assert.ok(expected.has('nodejs_gc_duration_seconds'), 'prom-client still has the GC metric');
  expected.delete('nodejs_gc_duration_seconds');

  const ours = new client.Registry();
  registerDefaultMetrics(ours);
  assert.deepEqual([...(await names(ours))].sort(), [...expected].sort());
  // The same help and type for each, so dashboards built on prom-client's names keep working.
  const shape = async (registry: client.Registry) =>
    (await registry.getMetricsAsJSON())
      .filter((metric) => expected.has(metric.name))
      .map(({ name, help, type }) => ({ name, help, type }))
      .sort((a, b) => a.name.localeCompare(b.name));
  assert.deepEqual(await shape(ours), await shape(all));
});

test('the service registry has them, and no GC observer', async () => {
  const metrics = createMetrics();
  const text = await metrics.text();
  for (const name of [
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_eventloop_lag_p99_seconds',
    'nodejs_heap_size_used_bytes',
  ]) {
    assert.match(text, new RegExp(`^${name} `, 'm'), name);
  }
  assert.doesNotMatch(text, /nodejs_gc_duration_seconds/);
});
