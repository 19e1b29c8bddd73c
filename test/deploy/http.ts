// HTTP from the deploy test to a containerised clubhouse: logins, checks with the session cookie,
// and waiting for /readyz. Each request on a fresh connection (no keep-alive), so that a cluster's
// workers each get their share.
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export function http(
  port: number,
  method: string,
  path: string,
  options: { body?: unknown; cookie?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        timeout: options.timeoutMs ?? 30_000,
        headers: {
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
          ...(options.cookie === undefined ? {} : { cookie: options.cookie }),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
        );
        response.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Logs in; returns the Cookie header that carries the session (sessionid and csrftoken). */
export async function login(port: number, username: string, password: string): Promise<string> {
  const answer = await http(port, 'POST', '/api/auth/login', { body: { username, password } });
  if (answer.status !== 200) throw new Error(`login answered ${answer.status}: ${answer.body}`);
  const cookies = ([] as string[]).concat(answer.headers['set-cookie'] ?? []);
  return cookies.map((cookie) => cookie.split(';')[0]).join('; ');
}

/**
 * Polls `path` until it answers `status`; resolves with the milliseconds it took. Fails after
 * `timeoutMs` with the last answer or error.
 */
export async function waitFor(
  port: number,
  path: string,
  status = 200,
  timeoutMs = 120_000,
): Promise<number> {
  const started = performance.now();
  let last = 'no answer yet';
  while (performance.now() - started < timeoutMs) {
    try {
      const answer = await http(port, 'GET', path, { timeoutMs: 5000 });
      if (answer.status === status) return performance.now() - started;
      last = `${answer.status} ${answer.body.slice(0, 300)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(25);
  }
  throw new Error(`${path} did not answer ${status} within ${timeoutMs} ms: ${last}`);
}
