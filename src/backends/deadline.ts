// One deadline over a whole attempt at a server (contract §5, §8): connect, TLS and the work, never
// longer than the backend's timeout, whatever the server does. What the attempt threw is classified
// into the failure classes, never rethrown, and what it opened is released whatever happened.
import type { BackendFailure } from './authenticator.ts';

/**
 * `attempt`'s answer, or `failed`'s for what it threw (sorted by `classify`) or for no answer within
 * `timeoutMs`; `release` runs in every case, once the answer is decided.
 */
export async function withinDeadline<T>(
  timeoutMs: number,
  attempt: () => Promise<T>,
  options: {
    readonly classify: (error: unknown) => { failure: BackendFailure; reason: string };
    readonly failed: (failure: BackendFailure, reason: string) => T;
    readonly release: () => void | Promise<void>;
  },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(
      () => resolve(options.failed('upstream_unavailable', `no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  const answer = attempt().catch((err: unknown) => {
    const { failure, reason } = options.classify(err);
    return options.failed(failure, reason);
  });
  try {
    return await Promise.race([answer, deadline]);
  } finally {
    clearTimeout(timer);
    await options.release();
  }
}
