// The HTTP client of the calls to an identity provider (contract §10): https only, certificates
// verified against the system roots plus the provider's `caFile`, through undici's own fetch and a
// connection pool per provider. Each call made on behalf of a callback is traced, so that a failure
// can be told apart by what the provider did (classify.ts): unreachable, answered the token request
// with an error, or answered it and the ID token failed a check.
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { CustomFetch } from 'openid-client';
import { Agent, fetch } from 'undici';

/** What the calls of one callback saw. */
export interface CallTrace {
  /** The token endpoint's status (the one POST of a callback); null until it answered. */
  tokenStatus: number | null;
  /** Why the provider could not be reached (connection, TLS, timeout, 5xx); null while it could. */
  unreachable: string | null;
}

const traces = new AsyncLocalStorage<CallTrace>();

/** Runs `work` with a fresh trace of the provider calls it makes. */
export async function traced<T>(
  work: () => Promise<T>,
): Promise<{ trace: CallTrace; outcome: PromiseSettledResult<T> }> {
  const trace: CallTrace = { tokenStatus: null, unreachable: null };
  const outcome = await traces.run(trace, () =>
    work().then(
      (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
      (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
    ),
  );
  return { trace, outcome };
}

/** Why a request got no answer: the socket's error code, a timeout, or the message. */
export function failureReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  const name = (err as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return 'timed out';
  return err instanceof Error ? err.message : String(err);
}

/** The same, with the path it was for (never the query). */
function unreachableReason(err: unknown, url: string): string {
  return `${failureReason(err)} (${new URL(url).pathname})`;
}

export interface ProviderHttp {
  /** openid-client's fetch: traced, on this provider's pool. */
  readonly fetch: CustomFetch;
  /** A plain GET for the readiness probe, within `timeoutMs`. */
  get(url: string, timeoutMs: number): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

/** The HTTP client of one provider; `caFile` is added to the system roots (built once). */
export function providerHttp(caFile: string | null): ProviderHttp {
  const ca = [...rootCertificates];
  if (caFile !== null) ca.push(readFileSync(caFile, 'utf8'));
  const dispatcher = new Agent({
    connect: { secureContext: createSecureContext({ ca, minVersion: 'TLSv1.2' }), rejectUnauthorized: true },
  });
  const traceFetch: CustomFetch = async (url, options) => {
    const trace = traces.getStore();
    let response: Awaited<ReturnType<typeof fetch>>;
    try {
      response = await fetch(url, { ...options, dispatcher });
    } catch (err) {
      if (trace !== undefined) trace.unreachable ??= unreachableReason(err, url);
      throw err;
    }
    if (trace !== undefined) {
      if (response.status >= 500) trace.unreachable ??= `HTTP ${response.status} (${new URL(url).pathname})`;
      if (options.method === 'POST') trace.tokenStatus = response.status;
    }
    // undici's Response is the one node's fetch exposes; openid-client checks it loosely.
    return response as unknown as Response;
  };
  return {
    fetch: traceFetch,
    async get(url, timeoutMs) {
      const response = await fetch(url, {
        dispatcher,
        redirect: 'manual',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      let body: unknown = null;
      try {
        body = await response.json();
      } catch {
        // Not JSON: the status and the missing fields say what is wrong.
      }
      return { status: response.status, body };
    },
    close: () => dispatcher.close(),
  };
}
