// Summing the metrics of WORKERS (contract §6: GET /metrics is the whole cluster's): a worker asks
// the primary over IPC; the primary answers with prom-client's AggregatorRegistry, which adds up
// every worker's registry, and serves the same sum on METRICS_PORT (http/metrics-port.ts).
import cluster from 'node:cluster';
import client from 'prom-client';

const METRICS_REQUEST = 'clubhouse:metrics-request';
const METRICS_RESPONSE = 'clubhouse:metrics-response';
let nextRequest = 0;

/** In a worker: the whole cluster's metrics, summed by the primary (contract §6). */
export function askPrimaryForMetrics(): Promise<string> {
  const id = ++nextRequest;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.off('message', onMessage);
      reject(new Error('the primary did not answer with the metrics'));
    }, 5000);
    const onMessage = (message: { type?: string; id?: number; text?: string; error?: string }) => {
      if (message?.type !== METRICS_RESPONSE || message.id !== id) return;
      clearTimeout(timer);
      process.off('message', onMessage);
      if (message.text === undefined) reject(new Error(message.error ?? 'no metrics'));
      else resolve(message.text);
    };
    process.on('message', onMessage);
    process.send?.({ type: METRICS_REQUEST, id });
  });
}

/** In the primary: answers the workers' requests for the summed metrics, and serves them itself. */
export function serveClusterMetrics(): { text(): Promise<string>; contentType: string } {
  const aggregator = new client.AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== METRICS_REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RESPONSE, id: message.id, text }),
      (err: unknown) => worker.send({ type: METRICS_RESPONSE, id: message.id, error: String(err) }),
    );
  });
  return { text: () => aggregator.clusterMetrics(), contentType: aggregator.contentType };
}
