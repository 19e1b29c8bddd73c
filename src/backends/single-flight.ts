// Identical attempts share one answer (contract §3, §5): attempts with the same canonical username
// and password that are in flight at once are answered by the first of them, at the backend's guard
// (one connection to the server instead of several) and in the login procedure (one verdict, one
// refusal delay; auth/login.ts). One key for "identical", kept by the pair's hash: the password
// itself is not kept.
import { createHash } from 'node:crypto';

/** The key of an attempt: identical username and password, identical key; neither readable in it. */
function attemptKey(username: string, password: string): string {
  return createHash('sha256').update(username).update('\0').update(password).digest('base64');
}

/** The attempts in flight, by key; each is forgotten once it has answered. */
export class SingleFlight<T> {
  readonly #running = new Map<string, Promise<T>>();

  /** The answer of the identical attempt already in flight, else `start`'s. */
  run(username: string, password: string, start: () => Promise<T>): Promise<T> {
    const key = attemptKey(username, password);
    const running = this.#running.get(key);
    if (running !== undefined) return running;
    const promise = start().finally(() => this.#running.delete(key));
    this.#running.set(key, promise);
    return promise;
  }
}
